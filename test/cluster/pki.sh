#!/usr/bin/env bash
# pki.sh DIR: the cluster suite's PKI. One CA signs everything: the API server's and the webhook's
# serving certificates, and the X.509 client certificates the API server authenticates as users
# (CN = user name, each O = a group):
#   admin    CN=admin, O=system:masters                   sets the cluster up
#   kcm      CN=system:kube-controller-manager             the controller manager
#   alice    CN=alice, O=devops                           a user
#   bob      CN=bob, O=qa                                 another user, who tries to be alice
#   airflow  CN=airflow, O=workflow-engines               an allow-listed external submitter
#   binder   CN=binder, O=binders                         may only create pods/binding (a scheduler's right)
#   carol    CN=carol, O=devops, O=data                   a user in two groups (load and fault runs)
# plus the service-account signing key pair. Regenerated on every run (a few seconds): nothing here is
# a secret worth caching.
set -euo pipefail
D=${1:?usage: pki.sh DIR}
mkdir -p "$D"
cd "$D"
rm -f ./*.crt ./*.key ./*.pub ./*.srl
openssl genrsa -out ca.key 2048 2>/dev/null
openssl req -x509 -new -nodes -key ca.key -sha256 -days 30 -subj "/CN=yunikorn-user-info-e2e-ca" -out ca.crt

sign() { # name subject extensions
  openssl genrsa -out "$1.key" 2048 2>/dev/null
  openssl req -new -key "$1.key" -subj "$2" -out "$1.csr"
  printf '%b' "$3" > "$1.ext"
  openssl x509 -req -in "$1.csr" -CA ca.crt -CAkey ca.key -CAcreateserial -days 30 -sha256 \
    -extfile "$1.ext" -out "$1.crt" 2>/dev/null
  rm -f "$1.csr" "$1.ext"
}
serving() { # name subject SANs
  sign "$1" "$2" "basicConstraints=CA:FALSE\nkeyUsage=critical,digitalSignature,keyEncipherment\nextendedKeyUsage=serverAuth\nsubjectAltName=$3\n"
}
client() { # name subject
  sign "$1" "$2" "basicConstraints=CA:FALSE\nkeyUsage=critical,digitalSignature,keyEncipherment\nextendedKeyUsage=clientAuth\n"
}

serving apiserver "/CN=kube-apiserver" "IP:127.0.0.1,IP:10.0.0.1,DNS:localhost,DNS:kubernetes,DNS:kubernetes.default,DNS:kubernetes.default.svc"
serving webhook "/CN=kwhost" "IP:127.0.0.1,DNS:localhost"
client admin "/CN=admin/O=system:masters"
client kcm "/CN=system:kube-controller-manager"
client alice "/CN=alice/O=devops"
client bob "/CN=bob/O=qa"
client airflow "/CN=airflow/O=workflow-engines"
client binder "/CN=binder/O=binders"
client carol "/CN=carol/O=devops/O=data"
openssl genrsa -out sa.key 2048 2>/dev/null
openssl rsa -in sa.key -pubout -out sa.pub 2>/dev/null
chmod 600 ./*.key
