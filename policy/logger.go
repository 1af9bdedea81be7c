package policy

import (
	"io"

	"github.com/francoispqt/onelog"
)

// NewLogger returns the policy's logger writing one JSON object per entry to w. policy-server accepts
// only the levels trace, debug, info, warning and error, and onelog writes "warn" for its WARN level
// (and "fatal", which the policy never uses): an entry with an unknown level is not logged at all, and
// policy-server logs "Cannot log event" in its place. So WARN is written as "warning".
func NewLogger(w io.Writer) *onelog.Logger {
	onelog.Levels[onelog.FATAL] = "error"
	onelog.LevelText(onelog.WARN, "warning") // regenerates the level prefixes once, for both texts
	return onelog.New(w, onelog.ALL)
}
