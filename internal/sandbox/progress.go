package sandbox

import (
	"context"
	"fmt"
	"io"
	"sort"
	"strings"
	"time"

	apimeta "k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"

	infrav1 "github.com/apiaryhq/apiary/api/infra/v1"
	workspacesv1 "github.com/apiaryhq/apiary/api/workspaces/v1"
	apiaryscheme "github.com/apiaryhq/apiary/internal/scheme"
)

// watchProgress prints the quick start's progress whenever it changes. It
// reports whether the Colony is ready and the workspace runs; with
// exitWhenReady it returns as soon as they are.
func watchProgress(ctx context.Context, cfg *rest.Config, out io.Writer, exitWhenReady, git bool) (bool, error) {
	c, err := client.New(cfg, client.Options{Scheme: apiaryscheme.New()})
	if err != nil {
		return false, err
	}
	last := map[string]string{}
	report := func(key, line string) {
		if last[key] != line {
			last[key] = line
			fmt.Fprintf(out, "  %s\n", line)
		}
	}
	ready := false
	for {
		colony := &infrav1.Colony{}
		colonyReady := false
		if err := c.Get(ctx, client.ObjectKey{Namespace: "kcm-system", Name: "quickstart"}, colony); err == nil {
			report("colony", fmt.Sprintf("Colony quickstart: %s, %d/%d clusters ready", phaseOr(string(colony.Status.Phase)),
				colony.Status.ReadyClusters, colony.Status.TotalClusters))
			if inv := describeInventory(colony); inv != "" {
				report("inventory", "GPU inventory: "+inv)
			}
			colonyReady = apimeta.IsStatusConditionTrue(colony.Status.Conditions, "Ready")
			if git {
				report("colony-git", "Colony quickstart: "+describeGit(colony.Status.Conditions))
				colonyReady = colonyReady && apimeta.IsStatusConditionTrue(colony.Status.Conditions, "Synced")
			}
		}
		wsd := &workspacesv1.WorkspaceDeployment{}
		running := false
		if err := c.Get(ctx, client.ObjectKey{Namespace: "kcm-system", Name: "my-notebook"}, wsd); err == nil {
			line := "WorkspaceDeployment my-notebook: " + phaseOr(string(wsd.Status.Phase))
			if wsd.Status.Message != "" {
				line += " — " + wsd.Status.Message
			}
			report("wsd", line)
			running = wsd.Status.Phase == workspacesv1.PhaseRunning
			if git {
				report("wsd-git", "WorkspaceDeployment my-notebook: "+describeGit(wsd.Status.Conditions))
				running = running && apimeta.IsStatusConditionTrue(wsd.Status.Conditions, "Synced")
			}
		}
		if git {
			if rev := fluxApplied(ctx, c); rev != "" {
				report("flux", "Flux applied "+rev)
			}
		}
		if colonyReady && running && !ready {
			ready = true
			fmt.Fprintln(out, "» the Colony is ready and the workspace runs; the release is in namespace ws-my-notebook on the child")
			if exitWhenReady {
				return true, nil
			}
		}
		select {
		case <-ctx.Done():
			return ready, nil
		case <-time.After(500 * time.Millisecond):
		}
	}
}

// describeGit summarises the Committed and Synced conditions.
func describeGit(conds []metav1.Condition) string {
	var parts []string
	for _, t := range []string{"Committed", "Synced"} {
		c := apimeta.FindStatusCondition(conds, t)
		if c == nil {
			parts = append(parts, t+" (not yet)")
			continue
		}
		part := fmt.Sprintf("%s=%s", t, c.Status)
		if c.Status == metav1.ConditionTrue {
			part += " (" + c.Message + ")"
		} else {
			part += " (" + c.Reason + ")"
		}
		parts = append(parts, part)
	}
	return strings.Join(parts, ", ")
}

func phaseOr(p string) string {
	if p == "" {
		return "(no status yet)"
	}
	return p
}

func describeInventory(c *infrav1.Colony) string {
	var parts []string
	for cd, inv := range c.Status.GPUInventory {
		for _, o := range inv.Offerings {
			model := o.Model
			if model == "" {
				model = "unlabelled " + o.Vendor
			}
			parts = append(parts, fmt.Sprintf("%s: %d × %s on %d nodes", cd, o.Total, model, o.Nodes))
		}
	}
	sort.Strings(parts)
	return strings.Join(parts, "; ")
}
