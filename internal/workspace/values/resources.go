package values

import (
	workspacesv1 "github.com/apiaryhq/apiary/api/workspaces/v1"
)

// MergeResources resolves the resources of a workspace from the class's
// defaultResources and the deployment's overrides, as the exalsius operator
// does:
//  1. start from a deep copy of class (nil counts as empty);
//  2. drop the class's gpuType and gpuNodeSelector (CEL forbids them on a
//     class; this is a defensive wipe, so they are never inherited);
//  3. every non-nil field of user replaces the class's field: replicas,
//     cpu, memory, storage, gpuCount, gpuVendor, gpuType, gpuNodeSelector;
//     gpuNodeSelector is replaced whole, never merged key by key;
//  4. replicas is 1 when neither sets it.
//
// An empty gpuNodeSelector is dropped, and perReplica is nil when no field
// of it is set. The result shares nothing with the inputs, which are not
// modified.
func MergeResources(class, user *workspacesv1.WorkspaceResourceSpec) workspacesv1.WorkspaceResourceSpec {
	var out workspacesv1.WorkspaceResourceSpec
	if class != nil {
		class.DeepCopyInto(&out)
	}
	if out.PerReplica != nil {
		out.PerReplica.GPUType = nil
		out.PerReplica.GPUNodeSelector = nil
	}
	if user != nil {
		if user.Replicas != nil {
			out.Replicas = ptr(*user.Replicas)
		}
		if u := user.PerReplica; u != nil {
			if out.PerReplica == nil {
				out.PerReplica = &workspacesv1.PerReplicaResources{}
			}
			o := out.PerReplica
			if u.CPU != nil {
				o.CPU = ptr(u.CPU.DeepCopy())
			}
			if u.Memory != nil {
				o.Memory = ptr(u.Memory.DeepCopy())
			}
			if u.Storage != nil {
				o.Storage = ptr(u.Storage.DeepCopy())
			}
			if u.GPUCount != nil {
				o.GPUCount = ptr(*u.GPUCount)
			}
			if u.GPUVendor != nil {
				o.GPUVendor = ptr(*u.GPUVendor)
			}
			if u.GPUType != nil {
				o.GPUType = ptr(*u.GPUType)
			}
			if u.GPUNodeSelector != nil {
				o.GPUNodeSelector = make(map[string]string, len(u.GPUNodeSelector))
				for k, v := range u.GPUNodeSelector {
					o.GPUNodeSelector[k] = v
				}
			}
		}
	}
	if out.Replicas == nil {
		out.Replicas = ptr(int32(1))
	}
	if p := out.PerReplica; p != nil {
		if len(p.GPUNodeSelector) == 0 {
			p.GPUNodeSelector = nil
		}
		if p.CPU == nil && p.Memory == nil && p.Storage == nil && p.GPUCount == nil &&
			p.GPUVendor == nil && p.GPUType == nil && p.GPUNodeSelector == nil {
			out.PerReplica = nil
		}
	}
	return out
}

// ptr returns a pointer to a copy of v.
func ptr[T any](v T) *T { return &v }
