package engine

import (
	"errors"
	"fmt"
	"reflect"
	"strings"
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
	// reads: the function returns its arguments, parts of them, or scalars.
	reads
	// copies: the function returns a fresh list or map of references to
	// its arguments' elements, charged by its length.
	copies
	// stores: the function puts references into a map or list (see
	// before): each entry is charged, and no map may end up inside itself.
	stores
)

// funcSpec is how one function is wrapped.
type funcSpec struct {
	fn    reflect.Value
	typ   reflect.Type // the wrapper's type: fn's arguments, then (result, error)
	class funcClass
	// extra estimates the bytes a call allocates beyond the expanded size
	// of its arguments (pre), for functions that multiply their input.
	extra func(args []reflect.Value, pre int64) int64
	// steps estimates the steps of a call that does more than linear work.
	steps func(args []reflect.Value) int64
}

var (
	readFuncs = []string{
		"get", "hasKey", "dig", "first", "mustFirst", "last", "mustLast", "slice", "mustSlice",
		"has", "mustHas", "default", "empty", "coalesce", "ternary", "all", "any",
		"kindIs", "kindOf", "typeIs", "typeIsLike", "typeOf", "deepEqual", "required", "fail", "lookup",
	}
	copyFuncs = []string{
		"pluck", "keys", "values", "pick", "omit", "rest", "mustRest", "initial", "mustInitial",
		"reverse", "mustReverse", "compact", "mustCompact", "without", "mustWithout",
		"concat", "chunk", "mustChunk", "uniq", "mustUniq",
	}
	storeFuncs = []string{
		"set", "unset", "dict", "list", "tuple",
		"append", "push", "mustAppend", "mustPush", "prepend", "mustPrepend",
		"merge", "mergeOverwrite", "mustMerge", "mustMergeOverwrite",
	}
)

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
			spec := &funcSpec{fn: v, typ: reflect.FuncOf(ins, outs, t.IsVariadic()), class: expands,
				extra: extraBytes[name], steps: extraSteps[name]}
			specs[name] = spec
		}
		for class, names := range map[funcClass][]string{reads: readFuncs, copies: copyFuncs, stores: storeFuncs} {
			for _, name := range names {
				specs[name].class = class
			}
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
	case copies:
		for _, a := range args {
			pre += 16 * int64(shallowLen(a))
		}
	case stores:
		return store(g, name, args)
	default:
		size, err := g.measure(name, g.remaining(), args...)
		if err != nil {
			return err
		}
		pre = size
	}
	if spec.extra != nil {
		pre += spec.extra(args, pre)
	}
	return g.tooLarge(name, pre)
}

// store charges the entries a store function adds, 16 bytes each: what
// they refer to was charged when it was made. Printing or encoding a map
// measures what it refers to, however often. set cannot put a map into
// itself, and merge walks its destination as deep as the sources go.
func store(g *guard, name string, args []reflect.Value) error {
	last := args[len(args)-1]
	switch name {
	case "set":
		if err := g.walkOnce(name, args[2], indirect(args[0])); err != nil {
			return err
		}
		return g.charge(16 + int64(len(strArg(args, 1))))
	case "unset":
		return nil
	case "dict", "list", "tuple":
		return g.charge(16 * int64(last.Len()+1))
	case "merge", "mergeOverwrite", "mustMerge", "mustMergeOverwrite":
		if _, err := g.measure(name, g.remaining(), args[0]); err != nil {
			return err
		}
		var n int64
		for i := 0; i < last.Len(); i++ {
			n += int64(shallowLen(last.Index(i)))
		}
		return g.charge(16 * n)
	default: // append, push, prepend and their must forms copy the list
		if err := g.step(int64(shallowLen(args[0])) / 16); err != nil {
			return err
		}
		return g.charge(16)
	}
}

// after charges what the call returned, and checks that a merge made no
// map contain itself.
func after(g *guard, name string, spec *funcSpec, args []reflect.Value, res reflect.Value) error {
	switch spec.class {
	case reads:
		return nil
	case copies:
		return g.charge(16 * int64(shallowLen(res)))
	case stores:
		if strings.HasPrefix(name, "merge") || strings.HasPrefix(name, "mustMerge") {
			return g.walkOnce(name, args[0], reflect.Value{})
		}
		return nil
	default:
		size, err := g.measure(name, g.remaining(), res)
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

// walkOnce fails when v reaches itself, or reaches target when target is a
// map: putting v into target would make it contain itself. It walks each
// map and list once, so its work is bounded by what exists, however shared.
func (g *guard) walkOnce(what string, v reflect.Value, target reflect.Value) error {
	var targetID identity
	if target.IsValid() && target.Kind() == reflect.Map && !target.IsNil() {
		targetID = identity{p: target.UnsafePointer()}
	}
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
			if id == targetID {
				return false
			}
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
