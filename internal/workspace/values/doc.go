// Package values computes the Helm values of a workspace release from a
// WorkspaceClass and a WorkspaceDeployment, with the semantics of the
// exalsius operator: the per-field merge of resources, the shallow merge of
// values, the injection of the resolved resources at the standard
// _exalsius.* paths and at the class's resourceInjection paths, and the
// compact JSON written into the ServiceSet.
//
// Beyond exalsius it resolves the GPU resource name of a bare gpuCount,
// rejects resourceInjection paths that would overwrite each other, keeps
// values of secret-typed user-facing fields out of the inline values, and
// merges valuesFrom documents with Flux HelmRelease semantics. What a chart
// reads about resources and placement is what was admitted and charged:
// values may set nothing under _exalsius (ReservedPath), and an injection
// path of a field that resolves to nothing holds nothing. The text written
// for Sveltos, which runs it as a Go template, escapes every template
// delimiter but those of a class administrator's Verbatim strings.
//
// Every function is pure: nothing talks to an API server, and no function
// modifies its arguments except Inject and SetPath, which write into the
// values map they are given, as documented.
package values
