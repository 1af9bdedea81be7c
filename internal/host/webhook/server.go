package webhook

import (
	"crypto/tls"
	"net/http"
	"time"
)

// Server returns an HTTPS server for h with every timeout bounded, so that a stuck client cannot hold
// a connection or a goroutine for ever. Serve it with ServeTLS(listener, "", "").
func Server(h http.Handler, cert tls.Certificate) *http.Server {
	return &http.Server{
		Handler:           h,
		TLSConfig:         &tls.Config{Certificates: []tls.Certificate{cert}, MinVersion: tls.VersionTLS12},
		ReadHeaderTimeout: 5 * time.Second,
		ReadTimeout:       30 * time.Second,
		// The API server waits at most 30 s (timeoutSeconds' maximum) for an answer.
		WriteTimeout:   35 * time.Second,
		IdleTimeout:    90 * time.Second,
		MaxHeaderBytes: 64 << 10,
	}
}
