package uninstall

import (
	"context"
	"flag"
	"fmt"
	"io"
	"os/signal"
	"syscall"

	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/apiaryhq/apiary/internal/cmdline"
	"github.com/apiaryhq/apiary/internal/scheme"
)

// Main runs `apiary uninstall` and returns the exit code: 0 when done, 1
// when a write failed or Apiary is running, 2 for bad arguments.
func Main(args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("apiary uninstall", flag.ContinueOnError)
	fs.SetOutput(stderr)
	kubeconfig := fs.String("kubeconfig", "", "The kubeconfig of the management cluster; the usual lookup when empty.")
	opts := Options{Log: stdout}
	fs.StringVar(&opts.Lease.Namespace, "leader-election-namespace", "apiary-system",
		"The namespace of Apiary's leader-election Leases, the main one and the shards' apiary-shard-<index> (the chart's release namespace).")
	fs.StringVar(&opts.Lease.Name, "leader-election-id", "apiary.infra.exalsius.ai",
		"The name of Apiary's leader-election Lease; empty checks only the shards' Leases.")
	fs.BoolVar(&opts.Force, "force", false, "Run even while a Lease is held.")
	fs.BoolVar(&opts.DryRun, "dry-run", false, "Print what would change without writing.")
	fs.BoolVar(&opts.Orphan, "orphan", false, "Also detach what Apiary's objects own (ClusterDeployments, ServiceSets, Secrets, ...): "+
		"remove every ownerReference to Apiary's kinds and the finalizers of Colonies and WorkspaceDeployments, "+
		"so that deleting Apiary's CRDs deletes nothing else (docs/operations.md).")
	cmdline.Usage(fs, stderr, "Usage: apiary uninstall [flags]",
		"Removes the finalizers and annotations only Apiary releases (the WorkspaceClass in-use finalizer,",
		"the applied-digest, adopted, prerequisite-unused-since and shard holder annotations), after Apiary is scaled down.",
		"With --orphan, also what lets Kubernetes delete the clusters with Apiary's CRDs.")
	if code, done := cmdline.Parse(fs, args, stderr); done {
		return code
	}
	cfg, err := cmdline.RestConfig(*kubeconfig)
	if err != nil {
		fmt.Fprintf(stderr, "apiary uninstall: %v\n", err)
		return 1
	}
	c, err := client.New(cfg, client.Options{Scheme: scheme.New()})
	if err != nil {
		fmt.Fprintf(stderr, "apiary uninstall: %v\n", err)
		return 1
	}
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGINT, syscall.SIGTERM)
	defer stop()
	rep, err := Run(ctx, c, opts)
	verb := "removed"
	if opts.DryRun {
		verb = "would remove"
	}
	fmt.Fprintf(stdout, "%s %d finalizers, %d owner references and the annotations of %d objects\n", verb, rep.Finalizers,
		rep.OwnerReferences, rep.Annotated)
	if err != nil {
		fmt.Fprintf(stderr, "apiary uninstall: %v\n", err)
		return 1
	}
	return 0
}
