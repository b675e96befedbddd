package render

import (
	"errors"
	"fmt"
	"reflect"
	"sync"
	"text/template"

	"github.com/Masterminds/sprig/v3"
)

// funcClass says how a template function is accounted to the render's
// guard. Every call is one step.
type funcClass int

const (
	// expands: the function walks or copies its arguments (fmt, JSON, YAML,
	// deepCopy, casts that print their argument in errors): their expanded
	// size must fit in the work left, and the result is charged. Any
	// function not classified otherwise expands.
	expands funcClass = iota
	// reads: the function returns its arguments, parts of them, or fresh
	// lists and maps of references to them: fresh lists and maps are
	// charged by their length.
	reads
	// stores: the function puts its arguments into a map or list, which
	// keeps them: their expanded size is charged, and none may contain the
	// map they go into.
	stores
)

// funcSpec is how one function is wrapped.
type funcSpec struct {
	fn    reflect.Value
	typ   reflect.Type // the wrapper's type: fn's arguments, then (result, error)
	class funcClass
	// into is, for stores, the argument that receives the others, or -1.
	into int
	// extra estimates the bytes a call allocates beyond the expanded size
	// of its arguments (pre), for functions that multiply their input.
	extra func(args []reflect.Value, pre int64) int64
	// steps estimates the steps of a call that does more than linear work.
	steps func(args []reflect.Value) int64
}

var readFuncs = []string{
	"get", "hasKey", "dig", "pluck", "keys", "values", "pick", "omit",
	"first", "mustFirst", "last", "mustLast", "rest", "mustRest", "initial", "mustInitial",
	"reverse", "mustReverse", "compact", "mustCompact", "without", "mustWithout", "has", "mustHas",
	"slice", "mustSlice", "concat", "chunk", "mustChunk", "uniq", "mustUniq",
	"default", "empty", "coalesce", "ternary", "all", "any",
	"kindIs", "kindOf", "typeIs", "typeIsLike", "typeOf", "deepEqual", "required", "fail", "lookup",
}

// storeFuncs maps each function that keeps its arguments to the argument
// that receives them (-1: a fresh map or list).
var storeFuncs = map[string]int{
	"set": 0, "unset": 0, "dict": -1, "list": -1, "tuple": -1,
	"append": 0, "push": 0, "mustAppend": 0, "mustPush": 0, "prepend": 0, "mustPrepend": 0,
	"merge": 0, "mergeOverwrite": 0, "mustMerge": 0, "mustMergeOverwrite": 0,
}

var (
	specsOnce sync.Once
	specs     map[string]*funcSpec
	errType   = reflect.TypeFor[error]()
)

// baseFuncs are the functions templates may call, unwrapped: sprig's, less
// env, expandenv and the forbidden ones, plus Helm's and text/template's
// printing functions, which are redefined so that they can be accounted.
func baseFuncs() template.FuncMap {
	f := sprig.TxtFuncMap()
	delete(f, "env")
	delete(f, "expandenv")
	for name := range forbiddenFuncs {
		delete(f, name)
	}
	for name, fn := range helmFuncs() {
		f[name] = fn
	}
	f["print"] = fmt.Sprint
	f["printf"] = fmt.Sprintf
	f["println"] = fmt.Sprintln
	f["html"] = template.HTMLEscaper
	f["js"] = template.JSEscaper
	f["urlquery"] = template.URLQueryEscaper
	return f
}

// funcSpecs returns the wrapping of every base function, built once.
func funcSpecs() map[string]*funcSpec {
	specsOnce.Do(func() {
		specs = map[string]*funcSpec{}
		for name, fn := range baseFuncs() {
			v := reflect.ValueOf(fn)
			t := v.Type()
			outs := []reflect.Type{t.Out(0), errType}
			ins := make([]reflect.Type, t.NumIn())
			for i := range ins {
				ins[i] = t.In(i)
			}
			spec := &funcSpec{fn: v, typ: reflect.FuncOf(ins, outs, t.IsVariadic()), class: expands, into: -1,
				extra: extraBytes[name], steps: extraSteps[name]}
			specs[name] = spec
		}
		for _, name := range readFuncs {
			specs[name].class = reads
		}
		for name, into := range storeFuncs {
			specs[name].class, specs[name].into = stores, into
		}
	})
	return specs
}

// wrapAll returns every base function wrapped to account its calls to g.
func wrapAll(g *guard) template.FuncMap {
	m := template.FuncMap{}
	for name, spec := range funcSpecs() {
		m[name] = wrap(g, name, spec)
	}
	return m
}

func wrap(g *guard, name string, spec *funcSpec) any {
	hasErr := spec.fn.Type().NumOut() == 2
	variadic := spec.typ.IsVariadic()
	fail := func(err error) []reflect.Value {
		return []reflect.Value{reflect.Zero(spec.typ.Out(0)), reflect.ValueOf(&err).Elem()}
	}
	return reflect.MakeFunc(spec.typ, func(args []reflect.Value) []reflect.Value {
		if err := before(g, name, spec, args); err != nil {
			return fail(err)
		}
		var res []reflect.Value
		if variadic {
			res = spec.fn.CallSlice(args)
		} else {
			res = spec.fn.Call(args)
		}
		if hasErr && !res[1].IsNil() {
			return res
		}
		if err := after(g, name, spec, args, res[0]); err != nil {
			return fail(err)
		}
		if !hasErr {
			res = append(res, reflect.Zero(errType))
		}
		return res
	}).Interface()
}

// before charges the call's step and refuses a call whose arguments or
// result would not fit in the work left.
func before(g *guard, name string, spec *funcSpec, args []reflect.Value) error {
	if err := g.step(1); err != nil {
		return err
	}
	if spec.steps != nil {
		if err := g.step(spec.steps(args)); err != nil {
			return err
		}
	}
	var pre int64
	switch spec.class {
	case reads:
		for _, a := range args {
			pre += 16 * int64(shallowLen(a))
		}
		if err := g.tooLarge(name, pre); err != nil {
			return err
		}
	case stores:
		var into reflect.Value
		stored := args
		if spec.into >= 0 {
			into = indirect(args[spec.into])
			stored = append(append([]reflect.Value(nil), args[:spec.into]...), args[spec.into+1:]...)
			if into.Kind() == reflect.Slice {
				pre += 16 * int64(into.Len()+1)
			}
		}
		size, err := g.measure(name, g.remaining(), into, stored...)
		if err != nil {
			return err
		}
		if err := g.charge(pre + size); err != nil {
			return err
		}
		pre = 0
	default:
		size, err := g.measure(name, g.remaining(), reflect.Value{}, args...)
		if err != nil {
			return err
		}
		pre = size
	}
	if spec.extra != nil {
		return g.tooLarge(name, pre+spec.extra(args, pre))
	}
	return nil
}

// after charges what the call returned, and checks that a merge made no
// map contain itself.
func after(g *guard, name string, spec *funcSpec, args []reflect.Value, res reflect.Value) error {
	switch spec.class {
	case reads:
		return g.charge(16 * int64(shallowLen(res)))
	case stores:
		if spec.into >= 0 && indirect(args[spec.into]).Kind() == reflect.Map {
			return g.acyclic(name, args[spec.into])
		}
		return nil
	default:
		size, err := g.measure(name, g.remaining(), reflect.Value{}, res)
		if err != nil {
			return err
		}
		return g.charge(size)
	}
}

func indirect(v reflect.Value) reflect.Value {
	for v.Kind() == reflect.Interface && !v.IsNil() {
		v = v.Elem()
	}
	return v
}

// shallowLen is the length of a map or list, else 0.
func shallowLen(v reflect.Value) int {
	v = indirect(v)
	switch v.Kind() {
	case reflect.Map, reflect.Slice, reflect.Array:
		return v.Len()
	}
	return 0
}

// acyclic fails when v reaches itself. It walks each map and list once,
// so its work is bounded by what the templates allocated.
func (g *guard) acyclic(what string, v reflect.Value) error {
	done := map[identity]bool{}
	onPath := map[identity]bool{}
	var visited int64
	var walk func(v reflect.Value) bool
	walk = func(v reflect.Value) bool {
		visited++
		v = indirect(v)
		var id identity
		switch v.Kind() {
		case reflect.Map:
			if v.IsNil() {
				return true
			}
			id = identity{p: v.UnsafePointer()}
		case reflect.Slice:
			if v.IsNil() || flat(v.Type().Elem()) {
				return true
			}
			id = identity{p: v.UnsafePointer(), n: v.Len()}
		default:
			return true
		}
		if onPath[id] {
			return false
		}
		if done[id] {
			return true
		}
		onPath[id] = true
		ok := true
		if v.Kind() == reflect.Map {
			for it := v.MapRange(); ok && it.Next(); {
				ok = walk(it.Value())
			}
		} else {
			for i := 0; ok && i < v.Len(); i++ {
				ok = walk(v.Index(i))
			}
		}
		delete(onPath, id)
		done[id] = true
		return ok
	}
	ok := walk(v)
	if err := g.step(visited / 64); err != nil {
		return err
	}
	if !ok {
		return fmt.Errorf("%s: %w", what, errCycle)
	}
	return nil
}

// failError is the message of required and fail, shown as is.
type failError struct{ msg string }

func (e *failError) Error() string { return e.msg }

// required returns val, or fails with warn when val is nil or "".
func required(warn string, val any) (any, error) {
	if s, isString := val.(string); val == nil || (isString && s == "") {
		return val, &failError{msg: warn}
	}
	return val, nil
}

func failFunc(msg string) (string, error) { return "", &failError{msg: msg} }

// errNoLookup is what lookup returns when called anyway.
var errNoLookup = errors.New("lookup is not available: bundles cannot read the cluster")

func lookup(string, string, string, string) (map[string]any, error) { return nil, errNoLookup }
