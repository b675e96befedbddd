// Package engine is a Go template engine with Helm's and sprig's functions,
// bounded in time, steps, bytes and nesting.
//
// Compile checks and parses a chart's templates as Helm's engine would
// (deeper paths first, the last definition of a name wins): it refuses a
// syntax error, an unknown function, a function that reads the cluster or
// changes at every call (lookup, now, rand*, uuidv4, gen* certificates,
// ...), and template actions that call their own template. Execute renders
// every template whose name does not start with "_" with Helm's functions
// (include, tpl, required, fail, toYaml, .Files, ...) on text/template:
// Helm's engine has no context, no bound on what it writes and no way to
// replace its functions.
//
// Every execution is bounded (Limits): in time, in steps (function calls,
// loop iterations, template calls), in the bytes its templates produce, in
// include and tpl nesting, and in the bytes of the rendered files. Each
// function call is accounted before it runs, so a call that would allocate
// gigabytes (repeat, until, nindent, ...) is refused, not run, and a map
// cannot be put into itself. Execution stops at the first limit, in the
// caller's goroutine: nothing keeps running after it returns. Every failure
// is an *Error naming the template file and line; one over a limit wraps
// ErrBudgetExceeded, ErrOutputTooLarge or ErrTimeout.
package engine
