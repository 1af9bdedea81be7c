package kwctl

import (
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
)

// The exit codes of `kwctl run`, which the project's commands share.
const (
	ExitOK       = 0 // the policy answered (allowed or rejected), or the command did its work
	ExitSettings = 1 // the policy refused its settings
	ExitUsage    = 2 // a bad command line, or an unreadable or malformed input
	ExitStart    = 3 // the module could not start
)

// Failer returns how a command ends on an error: "<command>: <error>" on stderr, then the exit code.
func Failer(stderr io.Writer, command string) func(code int, err error) int {
	return func(code int, err error) int {
		fmt.Fprintf(stderr, "%s: %v\n", command, err)
		return code
	}
}

// SettingsFlags are kwctl's settings flags, --settings-json and --settings-path (-s), which every command
// that evaluates the policy takes (kwhost run, demo and serve, yunikorn-user-info-preflight).
type SettingsFlags struct {
	JSON string
	Path string
}

// Register adds the flags to fs.
func (f *SettingsFlags) Register(fs *flag.FlagSet) {
	fs.StringVar(&f.JSON, "settings-json", "", "")
	fs.StringVar(&f.Path, "settings-path", "", "")
	fs.StringVar(&f.Path, "s", "", "")
}

// Conflict reports both flags given.
func (f *SettingsFlags) Conflict() error {
	if f.JSON != "" && f.Path != "" {
		return errors.New("--settings-json and --settings-path are mutually exclusive")
	}
	return nil
}

// Settings reads whichever flag was given, as kwctl does; none means {}.
func (f *SettingsFlags) Settings() (json.RawMessage, error) {
	if f.Path != "" {
		data, err := os.ReadFile(f.Path)
		if err != nil {
			return nil, fmt.Errorf("cannot read settings file: %w", err)
		}
		s, err := SettingsFromFile(data)
		if err != nil {
			return nil, fmt.Errorf("cannot parse settings file %s: %w", f.Path, err)
		}
		return s, nil
	}
	s, err := SettingsFromJSON([]byte(f.JSON))
	if err != nil {
		return nil, fmt.Errorf("cannot parse settings JSON: %w", err)
	}
	return s, nil
}

// ReadInput reads a file, or stdin for "-", as kwctl reads --request-path.
func ReadInput(path string, stdin io.Reader) ([]byte, error) {
	if path == "-" {
		return io.ReadAll(stdin)
	}
	return os.ReadFile(path)
}
