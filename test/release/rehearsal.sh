#!/usr/bin/env bash
# rehearsal.sh: rehearses the release workflow's publishing on this machine, with nothing beyond loopback:
#   1. builds (or finds) distribution's registry, cosign and syft (tools.sh; a proxy refusal skips loudly);
#   2. starts the registry on 127.0.0.1, inside a network namespace of its own when the kernel allows one
#      (then cosign and syft could not reach the network even if they tried);
#   3. pushes policy.wasm as kwctl push does (test/release/ociwasm) and checks the manifest;
#   4. signs it with a throwaway key and no transparency log, in the legacy format (the sha256-<digest>.sig
#      tag kwctl and policy-server read) and as a Sigstore bundle (an OCI referrer), and verifies both;
#   5. pulls it by tag and by digest and compares the bytes, and runs the README's Quick start request on it
#      (the route from a clone: a module pushed to a registry of one's own and run from there);
#   6. checks what must fail: a wrong key, an unsigned tag, a tag moved to a tampered module, a layer altered
#      in the registry's storage;
#   7. writes the SBOM as the release does (hack/sbom-source.sh, syft), signs and verifies it;
#   8. builds the pre-flight command as the release does (hack/build-preflight.sh), checks it
#      (hack/check-preflight.sh), signs and verifies its SHA256SUMS, and sees a changed binary, a changed
#      SHA256SUMS and another version refused;
#   9. runs the e2e suite on the module pulled by digest (make e2e-tests POLICY=...).
# Every process is bounded by a timeout and the registry is stopped by its PID. Called by
# `make release-rehearsal` with RUN, POLICY, OCIWASM, RELEASE_TOOLS and the tool versions.
set -euo pipefail
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
root=$(cd "$here/../.." && pwd)
: "${RUN:?}" "${POLICY:?}" "${OCIWASM:?}" "${KWHOST:?}" "${RELEASE_TOOLS:?}" "${DISTRIBUTION_VERSION:?}" "${COSIGN_VERSION:?}" "${SYFT_VERSION:?}"

if [ -z "${REHEARSAL_INSIDE:-}" ]; then
  rc=0
  "$here/tools.sh" || rc=$?
  [ "$rc" -eq 3 ] && exit 0 # skipped, with a banner
  [ "$rc" -eq 0 ] || exit "$rc"
  rm -rf "$RUN"
  mkdir -p "$RUN"
  # A network namespace with only a loopback interface, when unprivileged user namespaces are allowed.
  if timeout 10 unshare -rn true 2>/dev/null; then
    echo "rehearsal: in a network namespace of its own (loopback only)"
    # shellcheck disable=SC2016 # $0 is expanded by the inner bash
    REHEARSAL_INSIDE=1 timeout 600 unshare -rn bash -c 'ip link set lo up && exec "$0"' "$0"
  else
    echo "rehearsal: no user namespace here: relying on cosign's and syft's offline flags alone"
    "$root/hack/stage-note.sh" part "the release rehearsal ran without a network namespace of its own (unshare -rn refused)"
    REHEARSAL_INSIDE=1 timeout 600 "$0"
  fi
  # The pulled module is byte for byte policy.wasm (checked above), which the e2e-tests stage runs too:
  # REHEARSAL_E2E=0 leaves this second run out when time is short.
  if [ "${REHEARSAL_E2E:-1}" = 0 ]; then
    echo "rehearsal: REHEARSAL_E2E=0: the e2e suite was not run on the pulled module"
    exit 0
  fi
  echo "==== rehearsal: the e2e suite on the module pulled back from the registry by digest"
  make --no-print-directory -C "$root" e2e-tests POLICY="$RUN/pulled-by-digest.wasm"
  exit 0
fi

REGISTRY=$RELEASE_TOOLS/registry-$DISTRIBUTION_VERSION/registry
COSIGN=$RELEASE_TOOLS/cosign-$COSIGN_VERSION/cosign
SYFT=$RELEASE_TOOLS/syft-$SYFT_VERSION/syft
cd "$root"

# Go's caches stay where they are (hack/sbom-source.sh runs go list), and Go never asks the proxy here.
GOMODCACHE=$(go env GOMODCACHE) GOCACHE=$(go env GOCACHE) GOPATH=$(go env GOPATH)
export GOMODCACHE GOCACHE GOPATH GOPROXY=off
# cosign and syft must not call out: their state and caches in $RUN, no update checks, no telemetry.
export HOME="$RUN/home" TUF_ROOT="$RUN/tuf" XDG_CONFIG_HOME="$RUN/home/.config" XDG_CACHE_HOME="$RUN/home/.cache"
export SYFT_CHECK_FOR_APP_UPDATE=false OTEL_TRACES_EXPORTER=none OTEL_METRICS_EXPORTER=none OTEL_SDK_DISABLED=true
export COSIGN_PASSWORD='' COSIGN_YES=true
export -n http_proxy https_proxy HTTP_PROXY HTTPS_PROXY 2>/dev/null || true
mkdir -p "$HOME" "$TUF_ROOT"

passed=0
t0=$(date +%s)
ok() { passed=$((passed + 1)); echo "  ok   $* [$(($(date +%s) - t0))s]"; }
fail() { echo "  FAIL $*" >&2; exit 1; }
# must_fail WHAT REASON CMD...: CMD must exit non-zero, and say why with a line matching the extended
# regular expression REASON (a refusal for another reason, such as a network error, proves nothing).
must_fail() {
  local what=$1 reason=$2 out
  shift 2
  if out=$(timeout 120 "$@" 2>&1); then fail "$what: succeeded, must fail"; fi
  printf '### %s\n%s\n' "$what" "$out" >> "$RUN/negative.log"
  grep -Eq "$reason" <<< "$out" || fail "$what: refused, but not because /$reason/: $out"
  ok "$what: refused ($(grep -Eo "$reason" <<< "$out" | head -n 1))"
}
cosign() { timeout 120 "$COSIGN" "$@"; }

# --- the registry -----------------------------------------------------------------------------------
port=""
for p in $(seq 15300 15399); do
  if ! (exec 3<> "/dev/tcp/127.0.0.1/$p") 2>/dev/null; then port=$p; break; fi
done
[ -n "$port" ] || fail "no free port in 127.0.0.1:15300-15399"
cat > "$RUN/registry.yml" <<YAML
version: 0.1
log:
  level: error
  accesslog:
    disabled: true
storage:
  filesystem:
    rootdirectory: $RUN/registry
  delete:
    enabled: true
http:
  addr: 127.0.0.1:$port
  secret: rehearsal-only
YAML
timeout 600 "$REGISTRY" serve "$RUN/registry.yml" > "$RUN/registry.log" 2>&1 &
echo $! > "$RUN/registry.pid"
trap 'kill "$(cat "$RUN/registry.pid")" 2>/dev/null || true' EXIT
for _ in $(seq 1 100); do
  curl -fsS --max-time 1 -o /dev/null "http://127.0.0.1:$port/v2/" 2>/dev/null && break
  kill -0 "$(cat "$RUN/registry.pid")" 2>/dev/null || { cat "$RUN/registry.log" >&2; fail "the registry exited"; }
  sleep 0.1
done
curl -fsS --max-time 2 -o /dev/null "http://127.0.0.1:$port/v2/" || fail "the registry does not answer on 127.0.0.1:$port"
echo "rehearsal: registry $DISTRIBUTION_VERSION on 127.0.0.1:$port (pid $(cat "$RUN/registry.pid"))"

version=$(sed -n 's/^  io\.kubewarden\.policy\.version: *//p' metadata.yml)
repo="127.0.0.1:$port/policies/yunikorn-user-info"
tag="$repo:v$version"

# --- push, as kwctl push does ------------------------------------------------------------------------
echo "==== push"
ref=$(timeout 60 "$OCIWASM" push -metadata metadata.yml "$POLICY" "$tag")
[[ "$ref" == "$repo@sha256:"* ]] || fail "push printed '$ref', want $repo@sha256:..."
ok "pushed $tag as $ref"
digest=${ref#*@}
timeout 30 "$OCIWASM" manifest "$ref" > "$RUN/manifest.json"
jq -e '.schemaVersion == 2 and (has("mediaType") | not)
  and .config.mediaType == "application/vnd.wasm.config.v1+json" and .config.size == 2
  and (.layers | length) == 1 and .layers[0].mediaType == "application/vnd.wasm.content.layer.v1+wasm"' \
  "$RUN/manifest.json" > /dev/null || fail "the manifest is not what kwctl push writes: $(cat "$RUN/manifest.json")"
ok "manifest: config application/vnd.wasm.config.v1+json {}, one application/vnd.wasm.content.layer.v1+wasm layer"
[ "$(jq -r '.layers[0].size' "$RUN/manifest.json")" = "$(stat -c %s "$POLICY")" ] || fail "the layer's size is not the module's"
for key in io.kubewarden.policy.version io.kubewarden.policy.ociUrl io.kubewarden.policy.title; do
  want=$(sed -n "s/^  ${key//./\\.}: *//p" metadata.yml)
  got=$(jq -r --arg k "$key" '.annotations[$k]' "$RUN/manifest.json")
  [ "$got" = "$want" ] || fail "manifest annotation $key is '$got', metadata.yml says '$want'"
done
source=$(sed -n 's/^  io\.kubewarden\.policy\.source: *//p' metadata.yml)
[ "$(jq -r '.annotations["org.opencontainers.image.source"]' "$RUN/manifest.json")" = "$source" ] ||
  fail "manifest annotation org.opencontainers.image.source is not io.kubewarden.policy.source"
ok "manifest annotations are metadata.yml's, as kwctl push writes them"

# --- sign with a throwaway key, no transparency log ------------------------------------------------
echo "==== sign and verify"
mkdir -p "$RUN/keys"
(cd "$RUN/keys" && cosign generate-key-pair --output-key-prefix release > /dev/null 2>&1 &&
  cosign generate-key-pair --output-key-prefix stranger > /dev/null 2>&1) || fail "cosign generate-key-pair"
offline_sign=(--key "$RUN/keys/release.key" --tlog-upload=false --use-signing-config=false --yes)
offline_verify=(--insecure-ignore-tlog=true --insecure-ignore-sct=true)
cosign sign "${offline_sign[@]}" --new-bundle-format=false "$ref" > "$RUN/sign-legacy.log" 2>&1 ||
  { cat "$RUN/sign-legacy.log" >&2; fail "cosign sign (legacy .sig)"; }
ok "signed $ref (legacy: the .sig tag)"
cosign sign "${offline_sign[@]}" --new-bundle-format=true "$ref" > "$RUN/sign-bundle.log" 2>&1 ||
  { cat "$RUN/sign-bundle.log" >&2; fail "cosign sign (bundle)"; }
ok "signed $ref (Sigstore bundle, an OCI referrer)"

# The legacy signature is what kwctl and policy-server read: the tag sha256-<hex>.sig, a simple-signing
# payload naming the manifest's digest, the signature in the layer's annotations.
sig_tag="$repo:${digest/:/-}.sig"
curl -fsS --max-time 10 -H 'Accept: application/vnd.oci.image.manifest.v1+json' \
  "http://127.0.0.1:$port/v2/policies/yunikorn-user-info/manifests/${digest/:/-}.sig" > "$RUN/sig-manifest.json" ||
  fail "no $sig_tag: kwctl would find no signature"
jq -e '.layers[0].mediaType == "application/vnd.dev.cosign.simplesigning.v1+json"
  and (.layers[0].annotations["dev.cosignproject.cosign/signature"] | length) > 0' "$RUN/sig-manifest.json" > /dev/null ||
  fail "$sig_tag is not a cosign simple-signing signature: $(cat "$RUN/sig-manifest.json")"
payload=$(jq -r '.layers[0].digest' "$RUN/sig-manifest.json")
curl -fsS --max-time 10 "http://127.0.0.1:$port/v2/policies/yunikorn-user-info/blobs/$payload" > "$RUN/sig-payload.json"
[ "$(jq -r '.critical.image["docker-manifest-digest"]' "$RUN/sig-payload.json")" = "$digest" ] ||
  fail "the signed payload names $(jq -r '.critical.image["docker-manifest-digest"]' "$RUN/sig-payload.json"), not $digest"
ok "$sig_tag signs $digest (what kwctl verifies)"

cosign verify --key "$RUN/keys/release.pub" "${offline_verify[@]}" --new-bundle-format=false "$ref" > "$RUN/verify-legacy.json" 2> "$RUN/verify-legacy.log" ||
  { cat "$RUN/verify-legacy.log" >&2; fail "cosign verify (legacy) of $ref"; }
ok "verified $ref with the release key (legacy)"
cosign verify --key "$RUN/keys/release.pub" "${offline_verify[@]}" --new-bundle-format=true "$ref" > "$RUN/verify-bundle.json" 2> "$RUN/verify-bundle.log" ||
  { cat "$RUN/verify-bundle.log" >&2; fail "cosign verify (bundle) of $ref"; }
ok "verified $ref with the release key (bundle)"
cosign verify --key "$RUN/keys/release.pub" "${offline_verify[@]}" --new-bundle-format=false "$tag" > /dev/null 2>&1 ||
  fail "cosign verify of $tag (by tag)"
ok "verified $tag (by tag)"

# --- pull by tag and by digest ------------------------------------------------------------------------
echo "==== pull"
timeout 60 "$OCIWASM" pull -o "$RUN/pulled-by-tag.wasm" "$tag"
timeout 60 "$OCIWASM" pull -o "$RUN/pulled-by-digest.wasm" "$ref"
cmp -s "$POLICY" "$RUN/pulled-by-tag.wasm" || fail "the module pulled by tag differs from policy.wasm"
cmp -s "$POLICY" "$RUN/pulled-by-digest.wasm" || fail "the module pulled by digest differs from policy.wasm"
ok "pulled by tag and by digest: byte for byte policy.wasm ($(stat -c %s "$POLICY") bytes)"
# The README's route from a clone ends with `kwctl run` on the pushed module: bob's forged value is replaced.
run=$(timeout 60 "$KWHOST" run --request-path testdata/requests/pod-create-bob-forged.json "$RUN/pulled-by-tag.wasm") ||
  fail "kwhost run on the module pulled by tag"
jq -e '.allowed == true and .patchType == "JSONPatch" and (.warnings | length) == 1' <<< "$run" > /dev/null ||
  fail "the README's Quick start request on the pulled module: $run"
ok "the module pulled by tag replaces bob's forged value (README \"Quick start, from a clone\")"

# --- what must fail -------------------------------------------------------------------------------------
echo "==== what must fail"
must_fail "verify with another key (legacy)" 'invalid signature' "$COSIGN" verify --key "$RUN/keys/stranger.pub" "${offline_verify[@]}" --new-bundle-format=false "$ref"
must_fail "verify with another key (bundle)" 'signatures do not match threshold|invalid signature' "$COSIGN" verify --key "$RUN/keys/stranger.pub" "${offline_verify[@]}" --new-bundle-format=true "$ref"
# A module one byte off: an unsigned tag, then the release tag moved onto it.
cp "$POLICY" "$RUN/tampered.wasm"
printf '\x00' | dd of="$RUN/tampered.wasm" bs=1 seek=$(($(stat -c %s "$POLICY") - 1)) conv=notrunc status=none
cmp -s "$POLICY" "$RUN/tampered.wasm" && printf '\x01' | dd of="$RUN/tampered.wasm" bs=1 seek=$(($(stat -c %s "$POLICY") - 1)) conv=notrunc status=none
unsigned=$(timeout 60 "$OCIWASM" push -metadata metadata.yml "$RUN/tampered.wasm" "$repo:unsigned")
must_fail "verify an unsigned tag (legacy)" 'no signatures found' "$COSIGN" verify --key "$RUN/keys/release.pub" "${offline_verify[@]}" --new-bundle-format=false "$repo:unsigned"
must_fail "verify an unsigned tag (bundle)" 'no signatures found' "$COSIGN" verify --key "$RUN/keys/release.pub" "${offline_verify[@]}" --new-bundle-format=true "$unsigned"
timeout 60 "$OCIWASM" push -metadata metadata.yml "$RUN/tampered.wasm" "$tag" > /dev/null
must_fail "verify the release tag moved onto a tampered layer" 'no signatures found' "$COSIGN" verify --key "$RUN/keys/release.pub" "${offline_verify[@]}" --new-bundle-format=false "$tag"
cosign verify --key "$RUN/keys/release.pub" "${offline_verify[@]}" --new-bundle-format=false "$ref" > /dev/null 2>&1 ||
  fail "the signed digest no longer verifies after the tag moved"
timeout 60 "$OCIWASM" pull -o "$RUN/again-by-digest.wasm" "$ref"
cmp -s "$POLICY" "$RUN/again-by-digest.wasm" || fail "the digest reference no longer gives policy.wasm"
ok "the signed digest still verifies and still gives policy.wasm: pin the digest, not the tag"
# A layer altered in the registry's own storage: the pull checks every digest.
layer=$(jq -r '.layers[0].digest' "$RUN/manifest.json")
data="$RUN/registry/docker/registry/v2/blobs/sha256/${layer:7:2}/${layer#sha256:}/data"
[ -f "$data" ] || fail "no blob file $data"
chmod u+w "$data"
printf 'tampered' | dd of="$data" bs=1 seek=4096 conv=notrunc status=none
must_fail "pull a layer altered in the registry's storage" 'refusing it' "$OCIWASM" pull -o "$RUN/altered.wasm" "$ref"
[ ! -s "$RUN/altered.wasm" ] || fail "the altered layer was written to $RUN/altered.wasm"

# sign_blob WHAT FILE BUNDLE CHANGED: signs FILE into the Sigstore bundle BUNDLE with the throwaway key (the
# release signs its SBOM and SHA256SUMS keylessly), verifies it, and sees CHANGED, a copy of FILE changed
# after signing, refused.
sign_blob() {
  local what=$1 file=$2 bundle=$3 changed=$4
  cosign sign-blob --key "$RUN/keys/release.key" --tlog-upload=false --use-signing-config=false --new-bundle-format=true --yes \
    --bundle "$bundle" "$file" > "$RUN/sign-blob.log" 2>&1 || { cat "$RUN/sign-blob.log" >&2; fail "cosign sign-blob of $what"; }
  cosign verify-blob --key "$RUN/keys/release.pub" "${offline_verify[@]}" --new-bundle-format=true \
    --bundle "$bundle" "$file" > "$RUN/verify-blob.log" 2>&1 || { cat "$RUN/verify-blob.log" >&2; fail "cosign verify-blob of $what"; }
  ok "$what signed and verified (bundle)"
  must_fail "verify a changed $what against its bundle" 'invalid signature' "$COSIGN" verify-blob --key "$RUN/keys/release.pub" \
    "${offline_verify[@]}" --new-bundle-format=true --bundle "$bundle" "$changed"
}

# --- SBOM, as the release writes it ---------------------------------------------------------------------
echo "==== SBOM"
hack/sbom-source.sh "$RUN/sbom-source" > /dev/null
timeout 300 "$SYFT" scan "dir:$RUN/sbom-source" --source-name "yunikorn-user-info-$version" --source-version rehearsal \
  --output "spdx-json=$RUN/policy-sbom.spdx.json" > "$RUN/syft.log" 2>&1 || { cat "$RUN/syft.log" >&2; fail "syft scan"; }
want=$(sed -n 's/^\t\([^ ]*\) .*/\1/p' "$RUN/sbom-source/go.mod" | sort)
# Every package but the scanned directory itself (named after --source-name) and the main module.
got=$(jq -r --arg src "yunikorn-user-info-$version" --arg main "$(go list -m)" \
  '.packages[] | select(.name != $src and .name != $main) | .name' "$RUN/policy-sbom.spdx.json" | sort -u)
[ "$got" = "$want" ] || fail "the SBOM lists $(echo "$got" | wc -l) packages, not the $(echo "$want" | wc -l) modules that ship:
$(diff <(echo "$want") <(echo "$got") || true)"
ok "SBOM: exactly the $(echo "$want" | wc -l) Go modules compiled into the module"
jq '.name = "tampered"' "$RUN/policy-sbom.spdx.json" > "$RUN/tampered-sbom.json"
sign_blob SBOM "$RUN/policy-sbom.spdx.json" "$RUN/policy-sbom.spdx.jsonl.bundle.sigstore" "$RUN/tampered-sbom.json"

# --- the pre-flight command, as the release builds, checks and signs it -------------------------------
echo "==== pre-flight binaries"
timeout 300 hack/build-preflight.sh "$version" "$RUN/dist" "$POLICY" > "$RUN/build-preflight.log" 2>&1 ||
  { cat "$RUN/build-preflight.log" >&2; fail "hack/build-preflight.sh"; }
objects=internal/preflight/testdata/adoption-objects.json
timeout 180 hack/check-preflight.sh "$version" "$RUN/dist" "$objects" > "$RUN/check-preflight.log" 2>&1 ||
  { cat "$RUN/check-preflight.log" >&2; fail "hack/check-preflight.sh"; }
ok "$(tail -n 1 "$RUN/check-preflight.log")"
cp -r "$RUN/dist" "$RUN/dist-tampered"
printf 'tampered' >> "$RUN/dist-tampered/yunikorn-user-info-preflight-linux-arm64"
must_fail "check a pre-flight binary changed after SHA256SUMS" 'do not match' hack/check-preflight.sh "$version" "$RUN/dist-tampered" "$objects"
sed -i 's/^[0-9a-f]\{8\}/00000000/' "$RUN/dist-tampered/SHA256SUMS"
sign_blob SHA256SUMS "$RUN/dist/SHA256SUMS" "$RUN/dist/SHA256SUMS.bundle.sigstore" "$RUN/dist-tampered/SHA256SUMS"
must_fail "check a pre-flight binary stamped with another version" 'want yunikorn-user-info-preflight 0.0.0-other' hack/check-preflight.sh 0.0.0-other "$RUN/dist" "$objects"

echo "rehearsal: $passed checks passed; registry log $RUN/registry.log, refusals $RUN/negative.log"
