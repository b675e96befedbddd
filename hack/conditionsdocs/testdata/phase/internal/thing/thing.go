package thing

import (
	"github.com/fluxcd/pkg/runtime/conditions"

	v1 "github.com/apiaryhq/apiary/api/things/v1"
)

func set(obj conditions.Setter, phase v1.Phase) {
	conditions.MarkTrue(obj, v1.ReadyCondition, v1.UsedReason, "fine")
	conditions.MarkFalse(obj, v1.ReadyCondition, v1.OtherReason, "not yet")
	conditions.MarkReconciling(obj, string(phase), "in phase %s", phase)
}

func foreign(obj conditions.Setter) {
	conditions.MarkFalse(obj, v1.ReadyCondition, v1.ForeignReason, "only the other operator sets it")
}
