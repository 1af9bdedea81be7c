#!/usr/bin/env bash
# install-policy-server.sh DIR: copies Kubewarden's policy-server binary out of its released container image
# (ghcr.io/kubewarden/adm-controller/policy-server, the image a PolicyServer runs; the binary is /policy-server, a
# static build) into DIR, with docker, and prints its version. For GitHub's runners (.github/workflows/ci.yml),
# where docker is installed; elsewhere, build it: hack/build-kubewarden.sh. POLICY_SERVER_IMAGE overrides the image
# (pin a digest there: image@sha256:...).
set -euo pipefail
DIR=${1:?usage: install-policy-server.sh DIR}
IMAGE=${POLICY_SERVER_IMAGE:-ghcr.io/kubewarden/adm-controller/policy-server:v1.36.0}

command -v docker > /dev/null || { echo "install-policy-server.sh: docker is not installed (or build it: hack/build-kubewarden.sh)" >&2; exit 2; }
mkdir -p "$DIR"
docker pull --quiet "$IMAGE" > /dev/null
id=$(docker create "$IMAGE")
trap 'docker rm "$id" > /dev/null' EXIT
docker cp "$id:/policy-server" "$DIR/policy-server"
chmod 0755 "$DIR/policy-server"
echo "$IMAGE: $(docker image inspect --format '{{index .RepoDigests 0}}' "$IMAGE")"
"$DIR/policy-server" --version | head -n 1
