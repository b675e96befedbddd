package thing

import (
	"github.com/fluxcd/pkg/runtime/conditions"

	v1 "github.com/apiaryhq/apiary/api/things/v1"
)

// localReason is declared beside its use instead of in api/things/v1.
const localReason = "Local"

func set(obj conditions.Setter, ok bool) {
	if ok {
		conditions.MarkTrue(obj, v1.ReadyCondition, v1.UsedReason, "fine")
		return
	}
	conditions.MarkFalse(obj, v1.ReadyCondition, v1.OtherReason, "not yet")
	conditions.MarkFalse(obj, v1.ReadyCondition, "Broken", "a reason declared nowhere")
	conditions.MarkFalse(obj, v1.ReadyCondition, localReason, "a reason declared outside api/")
}

// Status is what a thing shows.
type Status struct{ Reason string }

func show(s *Status) {
	s.Reason = "Used" // the value of a constant, written as a literal
}
