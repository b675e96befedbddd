package thing

import (
	"github.com/fluxcd/pkg/runtime/conditions"

	v1 "github.com/apiaryhq/apiary/api/things/v1"
)

func set(obj conditions.Setter) {
	conditions.MarkTrue(obj, v1.ReadyCondition, v1.UsedReason, "fine")
	conditions.MarkTrue(obj, v1.ReadyCondition, v1.TwinReason, "fine too")
}
