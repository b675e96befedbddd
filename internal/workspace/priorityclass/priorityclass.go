// Package priorityclass resolves the priority a workspace waits for GPUs
// and quota with: the WorkspacePriorityClass it names itself, or else the
// one its WorkspaceClass names as the default. A workspace's own choice
// counts only where the priority class's namespaceSelector selects the
// workspace's namespace; a class default always counts, as the platform
// chose it for every workspace of the class. The namespace's labels are
// the platform's to write, not the tenant's, so a tenant cannot raise its
// own priority by writing a field.
//
// Resolve is a pure function of what the controller read.
package priorityclass

import (
	"fmt"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"

	workspacesv1 "github.com/apiaryhq/apiary/api/workspaces/v1"
)

// Outcome is what a resolution says.
type Outcome string

// Outcomes.
const (
	// None: neither the workspace nor its class names a priority class; the
	// workspace waits with priority 0, as before priorities existed.
	None Outcome = "None"
	// Resolved: the workspace waits with the class's value.
	Resolved Outcome = "Resolved"
	// NotFound: the named priority class does not exist.
	NotFound Outcome = "NotFound"
	// NotAllowed: the workspace names a priority class that does not
	// select its namespace.
	NotAllowed Outcome = "NotAllowed"
)

// Want is which priority class a workspace asks for.
type Want struct {
	// Name is the WorkspacePriorityClass; empty for none.
	Name string
	// Own is set when the workspace named it itself, rather than taking
	// its WorkspaceClass's default.
	Own bool
}

// Wanted returns the priority class a workspace asks for: its own
// spec.priorityClassName, or else its class's (class may be nil).
func Wanted(class *workspacesv1.WorkspaceClass, obj *workspacesv1.WorkspaceDeployment) Want {
	if obj.Spec.PriorityClassName != "" {
		return Want{Name: obj.Spec.PriorityClassName, Own: true}
	}
	if class != nil && class.Spec.PriorityClassName != "" {
		return Want{Name: class.Spec.PriorityClassName}
	}
	return Want{}
}

// Verdict is the resolution of a workspace's priority.
type Verdict struct {
	Outcome Outcome
	// Value is the priority the workspace waits with: the class's value
	// when Resolved, 0 otherwise.
	Value int32
	// Message says why, for the PriorityResolved condition.
	Message string
}

// Resolve decides the priority of a workspace that wants w, with pc the
// priority class read (nil when it does not exist) and nsLabels the labels
// of the workspace's namespace.
func Resolve(w Want, pc *workspacesv1.WorkspacePriorityClass, nsLabels map[string]string) Verdict {
	switch {
	case w.Name == "":
		return Verdict{Outcome: None}
	case pc == nil:
		return Verdict{Outcome: NotFound, Message: fmt.Sprintf("WorkspacePriorityClass %q not found", w.Name)}
	}
	if w.Own {
		if ok, why := Selects(pc.NamespaceSelector, nsLabels); !ok {
			return Verdict{Outcome: NotAllowed, Message: fmt.Sprintf(
				"WorkspacePriorityClass %q may not be used in this namespace (%s); remove spec.priorityClassName or ask the platform team", w.Name, why)}
		}
	}
	v := min(max(pc.Value, workspacesv1.MinWorkspacePriority), workspacesv1.MaxWorkspacePriority)
	from := "the workspace's own"
	if !w.Own {
		from = "its WorkspaceClass's default"
	}
	return Verdict{Outcome: Resolved, Value: v, Message: fmt.Sprintf("Priority %d from WorkspacePriorityClass %q, %s", v, w.Name, from)}
}

// Selects reports whether a priority class's namespaceSelector selects a
// namespace with the given labels, and why not: an unset selector selects
// none, a selector that does not parse selects none.
func Selects(sel *metav1.LabelSelector, nsLabels map[string]string) (bool, string) {
	if sel == nil {
		return false, "its namespaceSelector is unset: only WorkspaceClasses may give it"
	}
	s, err := metav1.LabelSelectorAsSelector(sel)
	if err != nil {
		return false, fmt.Sprintf("its namespaceSelector is invalid: %v", err)
	}
	if !s.Matches(labels.Set(nsLabels)) {
		return false, "its namespaceSelector does not select the namespace"
	}
	return true, ""
}
