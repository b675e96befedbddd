package plan

import (
	"fmt"

	workspacesv1 "github.com/apiaryhq/apiary/api/workspaces/v1"
	"github.com/apiaryhq/apiary/internal/workspace/values"
)

// reservedHint says why values under _exalsius are refused.
const reservedHint = "keys under " + values.ReservedKey +
	" are reserved for the resources and placement Apiary admits and charges; request resources with spec.resources"

// reservedError is the FieldError of values from source that set path
// under _exalsius. It names the path and the source, never a value.
func reservedError(field, source, path string) *FieldError {
	return &FieldError{Field: field, Reason: workspacesv1.ReservedValuesReason,
		Message: fmt.Sprintf("%s set %s: %s", source, path, reservedHint)}
}

// CheckClassValues returns the problems of a class whose defaultValues set
// a key under _exalsius, or whose userFacingConfig has a helmValuePath under
// it: neither could reach a chart (workspaces refuse such values), and the
// class is invalid. Each names its field and the path, never a value; paths
// that do not parse are left to values.ValidateFields.
func CheckClassValues(class *workspacesv1.WorkspaceClass) []*FieldError {
	var out []*FieldError
	defaults, err := JSONToMap(class.Spec.DefaultValues)
	if err != nil {
		out = append(out, &FieldError{Field: "spec.defaultValues", Reason: workspacesv1.ValuesInvalidReason, Message: err.Error()})
	}
	if path, ok := values.ReservedPath(defaults); ok {
		out = append(out, reservedError("spec.defaultValues", "the class's defaultValues", path))
	}
	for i, f := range class.Spec.UserFacingConfig {
		if segs, err := values.ParsePath(f.HelmValuePath); err == nil && segs[0] == values.ReservedKey {
			out = append(out, &FieldError{Field: fmt.Sprintf("spec.userFacingConfig[%d].helmValuePath", i), Reason: workspacesv1.ReservedValuesReason,
				Message: fmt.Sprintf("%q lies under %s: %s", f.HelmValuePath, values.ReservedKey, reservedHint)})
		}
	}
	return out
}
