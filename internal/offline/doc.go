// Package offline implements `apiary render`: it reads Colony,
// WorkspaceClass and WorkspaceDeployment manifests (and, optionally, a
// bundle directory like the manager's --bundle-dir) and prints the objects
// Apiary would apply or commit for them, like `helm template` or
// `flux build`, without a cluster.
//
// Rendering calls the packages the controllers call (render, naming, gpu,
// workspace/values) with the same inputs, so the output is byte for byte
// what the manager renders, with these differences, all due to the missing
// cluster:
//
//   - Owner references are left out: Apiary sets them with the owner's UID,
//     which offline objects do not have. Input .Input.*.uid is the object's
//     metadata.uid, usually empty.
//   - A WorkspaceDeployment is rendered as the controller renders it before
//     the GPU gate and the cluster lookups: its ClusterDeployment is not
//     looked up nor waited for, the GPU placement is only the node selector
//     derived from gpuType and gpuNodeSelector, and the GPU vendor only the
//     one the class or workspace gives (no vendor is inferred from nodes).
//   - The WorkspaceClass must be among the inputs; it is validated as the
//     class controller does for its injection paths and user-facing fields,
//     but its ServiceTemplates are not checked.
//   - valuesFrom is read from the Secrets and ConfigMaps among the inputs;
//     one that is not there is skipped with a warning on stderr naming the
//     file and field (spec.valuesFrom[i]). No value is invented for it.
//   - Prerequisite ServiceSets are printed for every prerequisite of a
//     workspace's class (once per cluster and template), unless a Colony
//     among the inputs installs the template through the ClusterDeployment's
//     spec.serviceSpec.services; the controller also skips those already
//     installed on the cluster, which cannot be known offline.
//   - A bundle referenced through bundle.configMapRef is read from the
//     ConfigMaps among the inputs.
//   - A Colony's aggregated kubeconfig Secret (<colony>-kubeconfigs) is not
//     printed: it lists the kubeconfig Secrets of provisioned clusters only.
//   - The operator settings passed to bundles (.Input.operator) hold the
//     delivery mode given by --delivery-mode (direct by default).
//
// Secrets are printed as Apiary delivers them, data base64-encoded; with
// RedactSecrets every data and stringData value of a Secret is replaced by
// Redacted, for sharing the output.
package offline
