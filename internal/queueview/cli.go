package queueview

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
	"text/tabwriter"
	"time"

	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/apiaryhq/apiary/internal/cmdline"
)

// Main runs `apiary queue` and returns the exit code: 0 when printed, 1
// when the server could not be asked or refused, 2 for bad arguments.
func Main(args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("apiary queue", flag.ContinueOnError)
	fs.SetOutput(stderr)
	kubeconfig := fs.String("kubeconfig", "", "The kubeconfig whose credentials (a bearer token) ask; the usual lookup when empty.")
	namespace := fs.String("n", "", "The namespace; the kubeconfig context's when empty.")
	server := fs.String("server", "", "The queue positions server's URL, e.g. https://apiary-queue.apiary-system.svc:8444 (the chart's NOTES print it).")
	ca := fs.String("certificate-authority", "", "A file with the CA of the server's certificate.")
	insecure := fs.Bool("insecure-skip-tls-verify", false, "Do not verify the server's certificate (a self-signed one).")
	output := cmdline.OutputFlag(fs)
	cmdline.Usage(fs, stderr, "Usage: apiary queue --server URL [flags]",
		"Prints where the namespace's waiting workspaces stand in their cluster's GPU queue and their TenantQuotas' queues,",
		"asked with the kubeconfig's token: the caller must be allowed to list the namespace's WorkspaceDeployments.")
	if code, done := cmdline.Parse(fs, args, stderr); done {
		return code
	}
	if *server == "" {
		fmt.Fprintln(stderr, "apiary queue: --server is needed")
		return 2
	}
	loading := clientcmd.NewDefaultClientConfigLoadingRules()
	loading.ExplicitPath = *kubeconfig
	cc := clientcmd.NewNonInteractiveDeferredLoadingClientConfig(loading, &clientcmd.ConfigOverrides{})
	cfg, err := cc.ClientConfig()
	if err != nil {
		fmt.Fprintf(stderr, "apiary queue: loading kubeconfig: %v\n", err)
		return 1
	}
	ns := *namespace
	if ns == "" {
		if ns, _, err = cc.Namespace(); err != nil {
			fmt.Fprintf(stderr, "apiary queue: %v\n", err)
			return 1
		}
	}
	places, err := Ask(context.Background(), cfg, *server, *ca, *insecure, ns)
	if err != nil {
		fmt.Fprintf(stderr, "apiary queue: %v\n", err)
		return 1
	}
	return output.Write(stdout, places, func(out io.Writer) { PrintTable(out, places) })
}

// Ask reads a namespace's places from the server at base with the
// credentials of cfg (its bearer token, token file or exec plugin), the
// server's certificate checked against caFile unless insecure.
func Ask(ctx context.Context, cfg *rest.Config, base, caFile string, insecure bool, ns string) ([]Place, error) {
	if cfg.BearerToken == "" && cfg.BearerTokenFile == "" && cfg.ExecProvider == nil && cfg.AuthProvider == nil {
		return nil, errors.New("the kubeconfig's user has no bearer token: the server authenticates tokens only (kubectl create token, or an OIDC login)")
	}
	ask := rest.AnonymousClientConfig(cfg)
	ask.BearerToken, ask.BearerTokenFile, ask.ExecProvider, ask.AuthProvider = cfg.BearerToken, cfg.BearerTokenFile, cfg.ExecProvider, cfg.AuthProvider
	ask.Host = base
	ask.TLSClientConfig = rest.TLSClientConfig{CAFile: caFile, Insecure: insecure}
	ask.Timeout = 30 * time.Second
	hc, err := rest.HTTPClientFor(ask)
	if err != nil {
		return nil, fmt.Errorf("a client for %s: %w", base, err)
	}
	u := strings.TrimSuffix(base, "/") + strings.Replace(Path, "{namespace}", url.PathEscape(ns), 1)
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u, nil)
	if err != nil {
		return nil, fmt.Errorf("asking %s: %w", u, err)
	}
	resp, err := hc.Do(req)
	if err != nil {
		return nil, fmt.Errorf("asking %s: %w", u, err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(io.LimitReader(resp.Body, 16<<20))
	if err != nil {
		return nil, fmt.Errorf("reading the answer of %s: %w", u, err)
	}
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("%s: %s: %s", u, resp.Status, strings.TrimSpace(string(body)))
	}
	var places []Place
	if err := json.Unmarshal(body, &places); err != nil {
		return nil, fmt.Errorf("decoding the answer of %s: %w", u, err)
	}
	return places, nil
}

// PrintTable prints a row per queue of each waiting workspace.
func PrintTable(out io.Writer, places []Place) {
	tw := tabwriter.NewWriter(out, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "WORKSPACE\tREASON\tPRIORITY\tQUEUED\tQUEUE\tPOSITION\tAHEAD")
	for _, p := range places {
		if len(p.Queues) == 0 {
			fmt.Fprintf(tw, "%s\t%s\t%d\t%s\t-\t-\t-\n", p.Name, p.Reason, p.Priority, p.QueuedAt.UTC().Format(time.RFC3339))
		}
		for _, q := range p.Queues {
			ahead := strings.Join(q.AheadInNamespace, ",")
			if q.AheadElsewhere > 0 {
				if ahead != "" {
					ahead += " and "
				}
				ahead += fmt.Sprintf("%d of other namespaces", q.AheadElsewhere)
			}
			if ahead == "" {
				ahead = "-"
			}
			fmt.Fprintf(tw, "%s\t%s\t%d\t%s\t%s %s\t%d/%d\t%s\n", p.Name, p.Reason, p.Priority, p.QueuedAt.UTC().Format(time.RFC3339),
				q.Kind, q.Name, q.Position, q.Length, ahead)
		}
	}
	_ = tw.Flush()
}
