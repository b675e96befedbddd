package monitoring

import (
	"sort"
	"strings"
)

// alertCase is the unit test of one alert: input series sampled every
// minute, moments at which it must not fire (while its for runs, and for
// series it must leave alone), and a moment at which it fires with labels
// (besides alertname and severity) and a rendered summary. description, when
// set, is the rendered description; otherwise the rule's own text is expected.
type alertCase struct {
	alert       string
	series      []series
	silent      []string
	firing      string
	labels      map[string]string
	summary     string
	description string
}

// sel writes a series selector: name{k="v",...} with sorted labels.
func sel(name string, labels map[string]string) string {
	keys := make([]string, 0, len(labels))
	for k := range labels {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	parts := make([]string, 0, len(keys))
	for _, k := range keys {
		parts = append(parts, k+`="`+labels[k]+`"`)
	}
	return name + "{" + strings.Join(parts, ",") + "}"
}

func in(name string, labels map[string]string, values string) series {
	return series{Series: sel(name, labels), Values: values}
}

func workspaceInfo(name, phase string, extra ...string) map[string]string {
	l := map[string]string{"customresource_kind": "WorkspaceDeployment", "exported_namespace": "team-a", "name": name, "phase": phase}
	for i := 0; i+1 < len(extra); i += 2 {
		l[extra[i]] = extra[i+1]
	}
	return l
}

func repo(name string, kv ...string) map[string]string {
	l := map[string]string{"repository": "https://git.example.com/" + name + ".git"}
	for i := 0; i+1 < len(kv); i += 2 {
		l[kv[i]] = kv[i+1]
	}
	return l
}

// syncBuckets are the bucket series of the commit-to-sync histogram of a
// repository that observes one sync a minute, each taking at most le seconds.
func syncBuckets(name, le string) []series {
	var out []series
	within := false
	for _, b := range []string{"60", "300", "600", "1200", "+Inf"} {
		within = within || b == le
		values := "0x40"
		if within {
			values = "0+1x40"
		}
		out = append(out, in("apiary_git_sync_latency_seconds_bucket", repo(name, "le", b), values))
	}
	return out
}

var alertCases = []alertCase{{
	alert: "ApiaryWorkspaceStuckDeploying",
	series: []series{
		in("apiary_resource_info", workspaceInfo("nb", "Deploying"), "1x40"),
		// Deploying for ten minutes, then Running: never stuck.
		in("apiary_resource_info", workspaceInfo("quick", "Deploying"), "1x10"),
		in("apiary_resource_info", workspaceInfo("quick", "Running"), "_x10 1x30"),
	},
	silent:  []string{"29m"},
	firing:  "35m",
	labels:  map[string]string{"exported_namespace": "team-a", "name": "nb"},
	summary: "Workspace team-a/nb has been Deploying for 30 minutes.",
}, {
	alert: "ApiaryWorkspaceFailed",
	series: []series{
		in("apiary_resource_info", workspaceInfo("nb", "Failed", "failure_reason", "HelmReleaseFailed"), "1x20"),
		in("apiary_resource_info", workspaceInfo("ok", "Running"), "1x20"),
	},
	silent:  []string{"4m"},
	firing:  "10m",
	labels:  map[string]string{"exported_namespace": "team-a", "name": "nb", "failure_reason": "HelmReleaseFailed"},
	summary: "Workspace team-a/nb failed (HelmReleaseFailed).",
}, {
	alert: "ApiaryGPUWaitersGrowing",
	series: []series{
		// None for an hour, then two: more than an hour before from 61m to 120m.
		in("apiary_workspaces_waiting", map[string]string{"reason": "WaitingForGpuCapacity"}, "0x60 2x70"),
		// One all along: waiting, but not growing.
		in("apiary_workspaces_waiting", map[string]string{"reason": "GpuCapacityFragmented"}, "1x130"),
	},
	silent:  []string{"80m", "125m"},
	firing:  "95m",
	labels:  map[string]string{"reason": "WaitingForGpuCapacity"},
	summary: "2 workspaces wait (WaitingForGpuCapacity), more than an hour ago, for 30 minutes now.",
}, {
	alert: "ApiaryGitPushFailing",
	series: []series{
		// Pushes succeed for ten minutes, then every attempt finds the server unreachable.
		in("apiary_git_pushes_total", repo("fleet", "result", "success"), "0+1x10 10x40"),
		in("apiary_git_pushes_total", repo("fleet", "result", "unreachable"), "0x10 0+2x40"),
		// The branch moves under every push, and the retries succeed.
		in("apiary_git_pushes_total", repo("tenant", "result", "success"), "0+1x50"),
		in("apiary_git_pushes_total", repo("tenant", "result", "non_fast_forward"), "0+1x50"),
	},
	silent:  []string{"30m"},
	firing:  "40m",
	labels:  map[string]string{"repository": "https://git.example.com/fleet.git"},
	summary: "Apiary cannot push to https://git.example.com/fleet.git.",
}, {
	alert:   "ApiaryGitSyncSlow",
	series:  append(syncBuckets("fleet", "1200"), syncBuckets("fast", "60")...),
	silent:  []string{"10m"},
	firing:  "20m",
	labels:  map[string]string{"repository": "https://git.example.com/fleet.git"},
	summary: "Flux takes more than 10 minutes to apply Apiary's commits to https://git.example.com/fleet.git.",
	description: "The 90th percentile of the time from push to the Kustomization reporting the commit applied is 19m 0s. " +
		"Check the Kustomization and GitRepository intervals and their Ready messages (flux get kustomizations -A).",
}, {
	alert: "ApiaryChildClusterUnreachable",
	series: []series{
		in("apiary_child_cluster_unreachable", map[string]string{"cluster_deployment": "team-a/fleet-a"}, "0x5 1x20"),
		in("apiary_child_cluster_unreachable", map[string]string{"cluster_deployment": "team-a/fleet-b"}, "0x25"),
	},
	silent:  []string{"8m"},
	firing:  "15m",
	labels:  map[string]string{"cluster_deployment": "team-a/fleet-a"},
	summary: "Apiary cannot reach the API server of child cluster team-a/fleet-a.",
}, {
	alert: "ApiaryColonyNotReady",
	series: []series{
		in("apiary_resource_info", map[string]string{"customresource_kind": "Colony", "exported_namespace": "team-a", "name": "fleet", "phase": "Degraded"}, "1x30"),
		in("apiary_resource_info", map[string]string{"customresource_kind": "Colony", "exported_namespace": "team-a", "name": "ok", "phase": "Ready"}, "1x30"),
	},
	silent:  []string{"14m"},
	firing:  "20m",
	labels:  map[string]string{"exported_namespace": "team-a", "name": "fleet", "phase": "Degraded"},
	summary: "Colony team-a/fleet is Degraded.",
}, {
	alert: "ApiaryTenantQuotaOverLimit",
	series: []series{
		in("apiary_resource_info", map[string]string{"customresource_kind": "TenantQuota", "name": "team-a", "within_limits": "False"}, "1x30"),
		in("apiary_resource_info", map[string]string{"customresource_kind": "TenantQuota", "name": "team-b", "within_limits": "True"}, "1x30"),
	},
	silent:  []string{"10m"},
	firing:  "20m",
	labels:  map[string]string{"name": "team-a"},
	summary: "TenantQuota team-a uses more than its limits.",
}, {
	alert: "ApiaryReconcileErrors",
	series: []series{
		// One reconcile in five fails.
		in("controller_runtime_reconcile_errors_total", map[string]string{"controller": "workspacedeployment"}, "0+2x40"),
		in("controller_runtime_reconcile_total", map[string]string{"controller": "workspacedeployment", "result": "error"}, "0+2x40"),
		in("controller_runtime_reconcile_total", map[string]string{"controller": "workspacedeployment", "result": "success"}, "0+8x40"),
		in("controller_runtime_reconcile_errors_total", map[string]string{"controller": "colony"}, "0x40"),
		in("controller_runtime_reconcile_total", map[string]string{"controller": "colony", "result": "success"}, "0+5x40"),
		// Another controller of the same process, not Apiary's.
		in("controller_runtime_reconcile_errors_total", map[string]string{"controller": "kustomization"}, "0+9x40"),
		in("controller_runtime_reconcile_total", map[string]string{"controller": "kustomization", "result": "error"}, "0+9x40"),
	},
	silent:  []string{"10m"},
	firing:  "20m",
	labels:  map[string]string{"controller": "workspacedeployment"},
	summary: "More than 10% of the workspacedeployment controller's reconciles fail.",
}, {
	alert: "ApiaryReconcileStuck",
	series: []series{
		in("workqueue_longest_running_processor_seconds", map[string]string{"controller": "colony", "name": "colony"}, "0+60x20"),
		in("workqueue_longest_running_processor_seconds", map[string]string{"controller": "workspacedeployment", "name": "workspacedeployment"}, "0x20"),
		in("workqueue_longest_running_processor_seconds", map[string]string{"controller": "kustomization", "name": "kustomization"}, "1000x20"),
	},
	silent:  []string{"8m"},
	firing:  "15m",
	labels:  map[string]string{"controller": "colony"},
	summary: "A reconcile of the colony controller has been running for more than 5 minutes.",
}}
