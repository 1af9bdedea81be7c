# lock.bash, sourced by the scripts that build a tool into a directory of its own.
# lock FILE SECONDS: holds an exclusive lock on FILE (file descriptor 9) until the script exits or locks again,
# waiting at most SECONDS for a build under way (make test builds tools in the background, hack/prebuild.sh,
# and .tools may be shared by several checkouts); exits 1 after that.
lock() {
  mkdir -p "$(dirname "$1")"
  exec 9> "$1"
  flock -w "$2" 9 || { echo "another build holds $1 for over $2 s" >&2; exit 1; }
}
