package version

import (
	"bytes"
	"runtime"
	"strings"
	"testing"
)

// stamp sets the link-time variables for one test, as -ldflags -X would.
func stamp(t *testing.T, v, c, d string) {
	old := [3]string{Version, Commit, Date}
	Version, Commit, Date = v, c, d
	t.Cleanup(func() { Version, Commit, Date = old[0], old[1], old[2] })
}

func run(args ...string) (code int, stdout, stderr string) {
	var out, errOut bytes.Buffer
	code = Main(args, &out, &errOut)
	return code, out.String(), errOut.String()
}

func TestVersionPrintsStampedValues(t *testing.T) {
	stamp(t, "1.2.3", "0123456789abcdef0123456789abcdef01234567", "2026-12-01T19:00:03Z")
	code, out, errOut := run()
	if code != 0 || errOut != "" {
		t.Fatalf("exit %d, stderr %q", code, errOut)
	}
	want := "apiary 1.2.3\n" +
		"commit: 0123456789abcdef0123456789abcdef01234567\n" +
		"built: 2026-12-01T19:00:03Z\n" +
		"go: " + runtime.Version() + "\n" +
		"platform: " + runtime.GOOS + "/" + runtime.GOARCH + "\n"
	if out != want {
		t.Errorf("output:\n%s\nwant:\n%s", out, want)
	}
}

func TestVersionShort(t *testing.T) {
	stamp(t, "0.4.0", "abc", "2026-01-02T03:04:05Z")
	code, out, _ := run("--short")
	if code != 0 || out != "0.4.0\n" {
		t.Errorf("exit %d, output %q; want 0.4.0", code, out)
	}
}

func TestVersionUnstampedSaysSo(t *testing.T) {
	stamp(t, "dev", "unknown", "unknown")
	_, out, _ := run()
	if !strings.HasPrefix(out, "apiary dev\ncommit: unknown\n") {
		t.Errorf("unstamped output %q", out)
	}
}

func TestVersionRefusesArguments(t *testing.T) {
	for _, args := range [][]string{{"extra"}, {"--bogus"}} {
		code, out, errOut := run(args...)
		if code != 2 || out != "" || errOut == "" {
			t.Errorf("%v: exit %d, stdout %q, stderr %q; want exit 2 with a message", args, code, out, errOut)
		}
	}
}
