// Package render renders Apiary's template bundles into Kubernetes objects.
//
// A bundle is a small Helm chart: Chart.yaml, values.yaml, an optional
// values.schema.json and templates/, rendered as Helm's template engine
// renders it (sprig functions, include, tpl, required, fail, toYaml,
// .Files), by the bounded engine of internal/render/engine on
// text/template. Built-in bundles are embedded from the repository's
// templates/ folder; users add their own in the manager's bundle directory
// (one folder per bundle, see NewRegistry) or in a ConfigMap whose keys are
// the file paths with "/" written as "__" (templates__cd.yaml, see
// LoadFiles).
//
// Rendering is pure: no lookup (it fails), no DNS, no network, no file
// outside the bundle, fixed .Capabilities. Functions whose result changes at
// every call (now, rand*, uuidv4, gen* certificates, ...) are refused when a
// bundle is loaded, so the same Request always gives the same bytes.
//
// Templates see:
//
//	.Values        values.yaml, with Request.Values merged over it (MergeValues)
//	.Input         the bundle's documented input (Request.Input)
//	.Release       Name, Namespace, IsInstall (true), IsUpgrade (false),
//	               Revision (1), Service ("Apiary")
//	.Chart         Chart.yaml
//	.Capabilities  Helm's defaults for this binary; no cluster is asked
//	.Files         the bundle's other files
//
// Every render is bounded (Limits): the engine bounds it in time, in steps
// (function calls, loop iterations, template calls), in the bytes its
// templates produce, in include and tpl nesting and in output size, each
// function call accounted before it runs; this package bounds its objects'
// count and size. The render stops at the first limit, in the caller's
// goroutine: nothing keeps running after it returns.
//
// Each rendered document must be a Kubernetes object with apiVersion, kind
// and metadata.name (labels and annotations strings); empty documents are
// dropped, NOTES.txt and files whose name starts with "_" are not rendered,
// and an object rendered twice is an error. A render is confined by its
// Request's Purpose and Namespace (ConfinementOf): an object of another
// kind, in another namespace, or cluster-scoped fails the render, whichever
// bundle rendered it, so no object outside the confinement leaves the
// package. Output sorts the objects and prints them as stable YAML, so Git
// commits of the output never churn. Every failure is an *Error naming the
// bundle, the file and the line.
package render
