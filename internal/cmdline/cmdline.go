// Package cmdline is what apiary's subcommands share: the usage text they
// print, how their flags are parsed (the exit codes: 0 for help, 2 for a
// bad argument) and how the kubeconfig is found.
package cmdline

import (
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"

	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	ctrl "sigs.k8s.io/controller-runtime"
)

// Usage sets fs's usage to lines, then its flags, on out.
func Usage(fs *flag.FlagSet, out io.Writer, lines ...string) {
	fs.Usage = func() {
		for _, l := range lines {
			fmt.Fprintln(out, l)
		}
		fs.PrintDefaults()
	}
}

// Parse parses args into fs, which takes no positional argument. When it
// returns done, the command exits with code: 0 after -h, 2 after a bad
// flag or an argument (named on stderr).
func Parse(fs *flag.FlagSet, args []string, stderr io.Writer) (code int, done bool) {
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return 0, true
		}
		return 2, true
	}
	if fs.NArg() > 0 {
		fmt.Fprintf(stderr, "%s: unexpected argument %q\n", fs.Name(), fs.Arg(0))
		return 2, true
	}
	return 0, false
}

// RestConfig is the configuration of the kubeconfig at path, or of the
// usual lookup (KUBECONFIG, in-cluster, ~/.kube/config) when path is empty.
func RestConfig(path string) (*rest.Config, error) {
	var cfg *rest.Config
	var err error
	if path != "" {
		cfg, err = clientcmd.BuildConfigFromFlags("", path)
	} else {
		cfg, err = ctrl.GetConfig()
	}
	if err != nil {
		return nil, fmt.Errorf("loading kubeconfig: %w", err)
	}
	return cfg, nil
}

// Output is the -o flag of a command that prints a table or JSON: any
// other value is a bad argument (exit code 2).
type Output string

// OutputFlag binds -o to fs, a table by default.
func OutputFlag(fs *flag.FlagSet) *Output {
	o := Output("table")
	fs.Var(&o, "o", "Output: table, or json.")
	return &o
}

func (o *Output) String() string { return string(*o) }

// Set implements flag.Value.
func (o *Output) Set(v string) error {
	if v != "table" && v != "json" {
		return errors.New("table or json")
	}
	*o = Output(v)
	return nil
}

// Write prints v as indented JSON when o is json, else with table; it
// returns the exit code.
func (o Output) Write(out io.Writer, v any, table func(io.Writer)) int {
	if o != "json" {
		table(out)
		return 0
	}
	enc := json.NewEncoder(out)
	enc.SetIndent("", "  ")
	if err := enc.Encode(v); err != nil {
		return 1
	}
	return 0
}
