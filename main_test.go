package main

import (
	"bytes"
	"os"
	"path/filepath"
	"testing"

	. "github.com/onsi/gomega"
)

// TestCommandLine runs apiary's command line as a user types it: a typo or
// a stray argument is an error before anything starts, help exits 0
// everywhere, and render says when it was given nothing to render. None of
// these cases may reach the manager: a run that did would need a cluster and
// never return within the test.
func TestCommandLine(t *testing.T) {
	empty := t.TempDir()
	other := t.TempDir()
	if err := os.WriteFile(filepath.Join(other, "cm.yaml"), []byte("apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: x\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		args           []string
		code           int
		stdout, stderr string
	}{
		{args: []string{"rendr", "-f", "x"}, code: 2, stderr: `unknown command "rendr"`},
		{args: []string{"start"}, code: 2, stderr: `unknown command "start"`},
		{args: []string{"--leader-elect=false", "render"}, code: 2, stderr: `unexpected argument "render"`},
		{args: []string{"--no-such-flag"}, code: 2, stderr: "flag provided but not defined"},
		{args: []string{"help"}, code: 0, stdout: "render "},
		{args: []string{"--help"}, code: 0, stderr: "uninstall "},
		{args: []string{"-h"}, code: 0, stderr: "--leader-elect"},
		{args: []string{"version", "--help"}, code: 0, stderr: "-short"},
		{args: []string{"render", "--help"}, code: 0, stderr: "Usage: apiary render"},
		{args: []string{"uninstall", "--help"}, code: 0, stderr: "Usage: apiary uninstall"},
		{args: []string{"render", "-f", empty}, code: 1, stderr: "holds no manifests"},
		{args: []string{"render", "-f", other}, code: 1, stderr: "nothing to render"},
	} {
		t.Run(tc.args[0]+"/"+tc.args[len(tc.args)-1], func(t *testing.T) {
			g := NewWithT(t)
			var stdout, stderr bytes.Buffer
			g.Expect(run(tc.args, &stdout, &stderr)).To(Equal(tc.code), "stderr: %s", stderr.String())
			g.Expect(stdout.String()).To(ContainSubstring(tc.stdout))
			g.Expect(stderr.String()).To(ContainSubstring(tc.stderr))
		})
	}
}
