// Package version holds the version, commit and build date of the apiary
// binary. The Makefile stamps them at link time with
// -ldflags "-X github.com/apiaryhq/apiary/internal/version.Version=...";
// `apiary version` prints them with the Go version and platform.
package version

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"runtime"
)

// Stamped at link time; the defaults are what a plain `go build` gives.
var (
	// Version is the release version without a leading v, e.g. 0.1.0: the
	// appVersion of charts/apiary/Chart.yaml.
	Version = "dev"
	// Commit is the Git commit the binary was built from, with a -dirty
	// suffix when the work tree had uncommitted changes.
	Commit = "unknown"
	// Date is the commit time (SOURCE_DATE_EPOCH) in RFC 3339, UTC, so that
	// rebuilding a commit gives the same binary.
	Date = "unknown"
)

// Info is what `apiary version` reports.
type Info struct {
	Version   string
	Commit    string
	Date      string
	GoVersion string
	Platform  string
}

// Get returns the stamped values and those of the running binary.
func Get() Info {
	return Info{
		Version:   Version,
		Commit:    Commit,
		Date:      Date,
		GoVersion: runtime.Version(),
		Platform:  runtime.GOOS + "/" + runtime.GOARCH,
	}
}

// Main runs `apiary version [--short]` and returns the exit code.
func Main(args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("apiary version", flag.ContinueOnError)
	fs.SetOutput(stderr)
	short := fs.Bool("short", false, "Print only the version.")
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return 0
		}
		return 2
	}
	if fs.NArg() > 0 {
		fmt.Fprintf(stderr, "apiary version: unexpected argument %q\n", fs.Arg(0))
		return 2
	}
	i := Get()
	if *short {
		fmt.Fprintln(stdout, i.Version)
		return 0
	}
	fmt.Fprintf(stdout, "apiary %s\ncommit: %s\nbuilt: %s\ngo: %s\nplatform: %s\n",
		i.Version, i.Commit, i.Date, i.GoVersion, i.Platform)
	return 0
}
