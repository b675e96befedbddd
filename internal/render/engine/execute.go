package engine

import (
	"context"
	"fmt"
	"maps"
	"path"
	"reflect"
	"strings"
	"text/template"
	"text/template/parse"
)

// Execute renders, within lim, every template of c that renders a file
// (those whose base name does not start with "_"), with data as the
// templates' top-level value ".", to which it adds .Files and .Template.
// It returns the text of each file by path (templates/x.yaml), with
// "<no value>" removed as Helm does. It stops, with an error wrapping
// ErrTimeout, when ctx ends or lim.Timeout passes. Errors are *Error.
func (c *Templates) Execute(ctx context.Context, lim Limits, data map[string]any) (map[string]string, error) {
	g := newGuard(ctx, lim)
	out, err := c.execute(g, data)
	if err != nil {
		return nil, c.templateError(g, err)
	}
	return out, nil
}

// execution is one render of a set of Templates.
type execution struct {
	c *Templates
	g *guard
	// trees holds the trees of tpl texts already instrumented.
	trees map[*parse.Tree]bool
}

// execute renders every file of the set with data, and returns the text of
// each by path in the chart.
func (c *Templates) execute(g *guard, data map[string]any) (map[string]string, error) {
	set, err := c.set.Clone()
	if err != nil {
		return nil, err
	}
	e := &execution{c: c, g: g, trees: map[*parse.Tree]bool{}}
	funcs := wrapAll(g)
	funcs[tickFunc] = func() (string, error) { return "", g.step(1) }
	funcs[printFunc] = e.print
	set.Funcs(funcs)
	e.bind(set)
	vals := maps.Clone(data)
	if vals == nil {
		vals = map[string]any{}
	}
	vals["Files"] = c.files
	out := make(map[string]string, len(c.renders))
	for _, name := range c.renders {
		vals["Template"] = map[string]any{"Name": name, "BasePath": path.Join(c.chartName, "templates")}
		w := &writer{g: g, output: true}
		if err := set.ExecuteTemplate(w, name, vals); err != nil {
			return nil, &fileError{file: name, err: err}
		}
		out[c.trimChart(name)] = strings.ReplaceAll(w.String(), "<no value>", "")
	}
	return out, nil
}

// bind gives set the include and tpl that render in it.
func (e *execution) bind(set *template.Template) {
	set.Funcs(template.FuncMap{"include": e.include(set), "tpl": e.tpl(set)})
}

// print lets a printed value through when fmt can expand it within the
// work left.
func (e *execution) print(v any) (any, error) {
	if err := e.g.step(1); err != nil {
		return nil, err
	}
	switch v.(type) {
	case nil, string, bool, int, int64, float64:
		return v, nil
	}
	if _, err := e.g.measure("printing a value", e.g.remaining(), reflect.ValueOf(v)); err != nil {
		return nil, err
	}
	return v, nil
}

func (e *execution) include(set *template.Template) func(string, any) (string, error) {
	return func(name string, data any) (string, error) {
		if err := e.g.enter(); err != nil {
			return "", err
		}
		defer e.g.leave()
		w := &writer{g: e.g}
		err := set.ExecuteTemplate(w, name, data)
		return w.String(), err
	}
}

// tpl renders text as a template of set, checked and instrumented as the
// chart's own templates are.
func (e *execution) tpl(set *template.Template) func(string, any) (string, error) {
	return func(text string, vals any) (string, error) {
		if err := e.g.enter(); err != nil {
			return "", err
		}
		defer e.g.leave()
		if err := e.g.charge(int64(len(text))); err != nil {
			return "", err
		}
		if err := checkTemplate(rootName, text); err != nil {
			return "", fmt.Errorf("tpl %s: %w", quoteShort(text), err.Err)
		}
		t, err := set.Clone()
		if err != nil {
			return "", err
		}
		t.Option("missingkey=zero")
		e.bind(t)
		if t, err = t.New(rootName).Parse(text); err != nil {
			return "", fmt.Errorf("cannot parse template %s: %w", quoteShort(text), err)
		}
		n, err := checkTemplateCalls(t, e.c.calls)
		if err != nil {
			return "", fmt.Errorf("tpl %s: %w", quoteShort(text), err)
		}
		if err := e.g.step(int64(n) / 64); err != nil {
			return "", err
		}
		instrumentSet(t, map[string]bool{rootName: true},
			func(tree *parse.Tree) bool { return e.c.trees[tree] || e.trees[tree] },
			func(tree *parse.Tree) { e.trees[tree] = true })
		w := &writer{g: e.g}
		if err := t.Execute(w, vals); err != nil {
			return "", fmt.Errorf("error during tpl function execution for %s: %w", quoteShort(text), err)
		}
		return strings.ReplaceAll(w.String(), "<no value>", ""), nil
	}
}

// quoteShort quotes at most the first 80 bytes of s, for error messages.
func quoteShort(s string) string {
	if len(s) > 80 {
		return fmt.Sprintf("%q...", s[:80])
	}
	return fmt.Sprintf("%q", s)
}
