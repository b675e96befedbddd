package usagereport

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os/signal"
	"strings"
	"syscall"
	"text/tabwriter"
	"time"

	"k8s.io/apimachinery/pkg/api/resource"
	"sigs.k8s.io/controller-runtime/pkg/client"

	commonv1 "github.com/apiaryhq/apiary/api/common/v1"
	"github.com/apiaryhq/apiary/internal/cmdline"
	"github.com/apiaryhq/apiary/internal/scheme"
	"github.com/apiaryhq/apiary/internal/usage"
)

// Main runs `apiary usage` and returns the exit code: 0 when printed, 1
// when the cluster could not be read, 2 for bad arguments.
func Main(args []string, stdout, stderr io.Writer) int {
	return RunWith(args, stdout, stderr, time.Now().UTC(), nil)
}

// RunWith is Main at a time, reading with reader (a client from the
// kubeconfig when nil).
func RunWith(args []string, stdout, stderr io.Writer, now time.Time, reader client.Reader) int {
	fs := flag.NewFlagSet("apiary usage", flag.ContinueOnError)
	fs.SetOutput(stderr)
	kubeconfig := fs.String("kubeconfig", "", "The kubeconfig of the management cluster; the usual lookup when empty.")
	monthStart := time.Date(now.Year(), now.Month(), 1, 0, 0, 0, 0, time.UTC)
	fromS := fs.String("from", monthStart.Format(usage.DateLayout), "The first UTC day of the window, YYYY-MM-DD (this month's first by default).")
	toS := fs.String("to", now.Format(usage.DateLayout), "The last UTC day of the window, YYYY-MM-DD, included (today by default).")
	tenant := fs.String("tenant", "", "Only this TenantQuota.")
	output := cmdline.OutputFlag(fs)
	cmdline.Usage(fs, stderr, "Usage: apiary usage [flags]",
		"Prints each tenant's (TenantQuota's) GPU-hours, CPU core-hours and memory GiB-hours over a window of UTC days,",
		"up to now: what the quotas counted and what their workspaces hold. Reads with the caller's rights; writes nothing.")
	if code, done := cmdline.Parse(fs, args, stderr); done {
		return code
	}
	from, err1 := time.Parse(usage.DateLayout, *fromS)
	last, err2 := time.Parse(usage.DateLayout, *toS)
	if err := errors.Join(err1, err2); err != nil || last.Before(from) {
		fmt.Fprintf(stderr, "apiary usage: --from and --to are days (YYYY-MM-DD), --from not after --to\n")
		return 2
	}
	if reader == nil {
		c, err := newClient(*kubeconfig)
		if err != nil {
			fmt.Fprintf(stderr, "apiary usage: %v\n", err)
			return 1
		}
		reader = c
	}
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGINT, syscall.SIGTERM)
	defer stop()
	rows, err := Read(ctx, reader, *tenant, from, last.AddDate(0, 0, 1), now)
	if err != nil {
		fmt.Fprintf(stderr, "apiary usage: %v\n", err)
		return 1
	}
	return output.Write(stdout, rows, func(out io.Writer) { printTable(out, rows) })
}

func newClient(kubeconfig string) (client.Client, error) {
	cfg, err := cmdline.RestConfig(kubeconfig)
	if err != nil {
		return nil, err
	}
	return client.New(cfg, client.Options{Scheme: scheme.New()})
}

// printTable prints a row per tenant: hours, to two decimals.
func printTable(out io.Writer, rows []Row) {
	tw := tabwriter.NewWriter(out, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "TENANT\tFROM\tTO\tGPU-HOURS\tCPU-CORE-HOURS\tMEMORY-GIB-HOURS\tNOTE")
	for _, r := range rows {
		note := ""
		if !r.Complete {
			note = "days before the oldest kept are missing"
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%.2f\t%.2f\t%s\n", r.Tenant, r.From, r.To, gpuHours(r.Usage),
			quantityHours(r.Usage.CPU, 1), quantityHours(r.Usage.Memory, 1<<30), note)
	}
	_ = tw.Flush()
}

// gpuHours is "resource[/model]=hours, ..." or "0".
func gpuHours(u commonv1.ResourceUsage) string {
	var parts []string
	for _, g := range u.GPUs {
		name := g.ResourceName
		if g.Model != "" {
			name += "/" + g.Model
		}
		parts = append(parts, fmt.Sprintf("%s=%.2f", name, float64(g.Seconds)/3600))
	}
	if len(parts) == 0 {
		return "0"
	}
	return strings.Join(parts, ",")
}

// quantityHours is a quantity of unit-seconds in unit-hours.
func quantityHours(q *resource.Quantity, unit float64) float64 {
	if q == nil {
		return 0
	}
	return q.AsApproximateFloat64() / 3600 / unit
}
