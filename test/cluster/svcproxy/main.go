// svcproxy is the cluster suite's stand-in for kube-proxy, for one Service port: it accepts TCP connections on
// -listen (the Service's ClusterIP and port, added to lo in the suite's own network namespace) and forwards each,
// byte for byte, to -target (where the process behind the Service listens). TLS passes through untouched: the
// client checks the certificate of the process behind, as through kube-proxy.
//
//	svcproxy -listen 10.0.0.12:443 -target 127.0.0.1:9443
//
// The Kubewarden stage (test/cluster/kubewarden.bats) needs it for Kubewarden's controller, whose webhook server
// listens on every interface at --webhook-server-port (there is no flag for the address), while the API server dials
// the chart's Service at its ClusterIP and port 443, the port the policy server's Service uses on another ClusterIP.
package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"os"
	"time"
)

func main() {
	listen := flag.String("listen", "", "the Service's address, ClusterIP:port")
	target := flag.String("target", "", "the address to forward to, host:port")
	flag.Parse()
	if *listen == "" || *target == "" || flag.NArg() > 0 {
		fmt.Fprintln(os.Stderr, "usage: svcproxy -listen CLUSTERIP:PORT -target HOST:PORT")
		os.Exit(2)
	}
	ln, err := net.Listen("tcp", *listen)
	if err != nil {
		fmt.Fprintln(os.Stderr, "svcproxy:", err)
		os.Exit(1)
	}
	fmt.Fprintf(os.Stderr, "svcproxy: %s -> %s\n", ln.Addr(), *target)
	for {
		c, err := ln.Accept()
		if err != nil {
			var ne net.Error
			if errors.As(err, &ne) && ne.Timeout() {
				continue
			}
			fmt.Fprintln(os.Stderr, "svcproxy:", err)
			os.Exit(1)
		}
		go forward(c, *target)
	}
}

// forward copies both ways between c and a new connection to target, until either side closes.
func forward(c net.Conn, target string) {
	defer c.Close()
	t, err := net.DialTimeout("tcp", target, 5*time.Second)
	if err != nil {
		fmt.Fprintf(os.Stderr, "svcproxy: %s: %v\n", c.RemoteAddr(), err)
		return
	}
	defer t.Close()
	done := make(chan struct{}, 2)
	pipe := func(dst, src net.Conn) {
		_, _ = io.Copy(dst, src)
		if tc, ok := dst.(*net.TCPConn); ok {
			_ = tc.CloseWrite()
		}
		done <- struct{}{}
	}
	go pipe(t, c)
	go pipe(c, t)
	<-done
	<-done
}
