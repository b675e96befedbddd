package render

import (
	"errors"
	"fmt"
	"path"
	"reflect"
	"sort"
	"strings"
	"text/template"
	"text/template/parse"

	"helm.sh/helm/v3/pkg/chart"
)

// The engine renders a bundle's templates as Helm's engine does (the same
// functions, .Files, include, tpl, "<no value>" removed), on text/template,
// so that every step can be accounted: Helm's engine has no context, no
// way to bound what it writes and no way to replace its functions.

const (
	// rootName is the name of the template set, and of tpl's text.
	rootName = "gotpl"
	// tickFunc is called by the first node of every loop body and defined
	// template: one step of the guard.
	tickFunc = "_apiaryStep"
	// printFunc ends the pipeline of every action that prints: it measures
	// the printed value before fmt expands it.
	printFunc = "_apiaryPrint"
	// maxTemplateChain bounds nested template actions, whose names are
	// fixed: include and tpl are bounded by Limits.MaxDepth.
	maxTemplateChain = 100
)

// compiled is a bundle's template set, parsed and instrumented once; renders
// clone it. Its trees are never changed after compile.
type compiled struct {
	chartName string
	set       *template.Template
	// renders are the templates that render a file, in Helm's order.
	renders []string
	trees   map[*parse.Tree]bool
	// calls are the template actions of each tree, by callee name.
	calls map[*parse.Tree][]string
	files files
}

// compile parses the chart's templates in Helm's order (deeper paths first,
// then by name, last wins for a template defined twice) and instruments
// them.
func compile(bundle string, c *chart.Chart) (*compiled, error) {
	names := make([]string, 0, len(c.Templates))
	text := map[string]string{}
	for _, t := range c.Templates {
		name := path.Join(c.Name(), t.Name)
		names = append(names, name)
		text[name] = string(t.Data)
	}
	sort.Slice(names, func(i, j int) bool {
		di, dj := strings.Count(names[i], "/"), strings.Count(names[j], "/")
		if di != dj {
			return di > dj
		}
		return names[i] > names[j]
	})
	set := template.New(rootName).Option("missingkey=zero").Funcs(placeholderFuncs())
	comp := &compiled{chartName: c.Name(), set: set, trees: map[*parse.Tree]bool{}, files: newFiles(c.Files)}
	for _, name := range names {
		if _, err := set.New(name).Parse(text[name]); err != nil {
			line, msg := parseErrorLocation(err.Error())
			return nil, newError(bundle, ReasonTemplate, trimChart(c.Name(), name), line, fmt.Errorf("%s", msg))
		}
		if !strings.HasPrefix(path.Base(name), "_") {
			comp.renders = append(comp.renders, name)
		}
	}
	comp.calls = map[*parse.Tree][]string{}
	for _, t := range set.Templates() {
		if t.Tree != nil && t.Root != nil {
			comp.calls[t.Tree] = templateCalls(t.Root, nil)
		}
	}
	if _, err := checkTemplateCalls(set, comp.calls); err != nil {
		return nil, newError(bundle, ReasonTemplate, "", 0, err)
	}
	isFile := map[string]bool{}
	for _, name := range names {
		isFile[name] = true
	}
	instrumentSet(set, isFile, func(*parse.Tree) bool { return false }, func(t *parse.Tree) { comp.trees[t] = true })
	return comp, nil
}

// placeholderFuncs are the names templates may call, for parsing.
func placeholderFuncs() template.FuncMap {
	m := baseFuncs()
	m["include"] = func(string, any) (string, error) { return "", nil }
	m["tpl"] = func(string, any) (string, error) { return "", nil }
	m[tickFunc] = func() string { return "" }
	m[printFunc] = func(v any) any { return v }
	return m
}

// instrumentSet instruments every tree of set for which skip is false, and
// marks it. Templates named in isFile render a file or a tpl text; the
// others are defined, and start with a step.
func instrumentSet(set *template.Template, isFile map[string]bool, skip func(*parse.Tree) bool, mark func(*parse.Tree)) {
	for _, t := range set.Templates() {
		if t.Tree == nil || t.Root == nil || skip(t.Tree) {
			continue
		}
		mark(t.Tree)
		instrumentList(t.Tree, t.Root)
		if !isFile[t.Name()] {
			t.Root.Nodes = append([]parse.Node{tick(t.Tree, t.Root.Pos)}, t.Root.Nodes...)
		}
	}
}

// instrumentList ends every printing action with printFunc and starts every
// loop body with tickFunc.
func instrumentList(tree *parse.Tree, list *parse.ListNode) {
	if list == nil {
		return
	}
	for _, n := range list.Nodes {
		switch n := n.(type) {
		case *parse.ActionNode:
			if len(n.Pipe.Decl) == 0 {
				n.Pipe.Cmds = append(n.Pipe.Cmds, &parse.CommandNode{NodeType: parse.NodeCommand, Pos: n.Pos,
					Args: []parse.Node{parse.NewIdentifier(printFunc).SetTree(tree).SetPos(n.Pos)}})
			}
		case *parse.IfNode:
			instrumentList(tree, n.List)
			instrumentList(tree, n.ElseList)
		case *parse.WithNode:
			instrumentList(tree, n.List)
			instrumentList(tree, n.ElseList)
		case *parse.RangeNode:
			instrumentList(tree, n.List)
			instrumentList(tree, n.ElseList)
			n.List.Nodes = append([]parse.Node{tick(tree, n.List.Pos)}, n.List.Nodes...)
		}
	}
}

// tick is the action {{_apiaryStep}}, which prints nothing.
func tick(tree *parse.Tree, pos parse.Pos) parse.Node {
	ident := parse.NewIdentifier(tickFunc).SetTree(tree).SetPos(pos)
	cmd := &parse.CommandNode{NodeType: parse.NodeCommand, Pos: pos, Args: []parse.Node{ident}}
	return &parse.ActionNode{NodeType: parse.NodeAction, Pos: pos,
		Pipe: &parse.PipeNode{NodeType: parse.NodePipe, Pos: pos, Cmds: []*parse.CommandNode{cmd}}}
}

// checkTemplateCalls refuses template actions that call their own template
// (directly or not), or chains of them deeper than maxTemplateChain: their
// names are fixed, so this is known before rendering. known holds the calls
// of trees already walked; it returns how many templates it looked at.
func checkTemplateCalls(set *template.Template, known map[*parse.Tree][]string) (int, error) {
	calls := map[string][]string{}
	for _, t := range set.Templates() {
		if t.Tree == nil || t.Root == nil {
			continue
		}
		c, ok := known[t.Tree]
		if !ok {
			c = templateCalls(t.Root, nil)
		}
		calls[t.Name()] = c
	}
	height := map[string]int{}
	onPath := map[string]bool{}
	var visit func(name string) (int, error)
	visit = func(name string) (int, error) {
		if onPath[name] {
			return 0, fmt.Errorf("template %q calls itself through template actions: use include, whose depth is bounded", name)
		}
		if h, ok := height[name]; ok {
			return h, nil
		}
		onPath[name] = true
		h := 0
		for _, callee := range calls[name] {
			ch, err := visit(callee)
			if err != nil {
				return 0, err
			}
			h = max(h, ch+1)
		}
		delete(onPath, name)
		if h > maxTemplateChain {
			return 0, fmt.Errorf("template %q starts a chain of more than %d nested template actions", name, maxTemplateChain)
		}
		height[name] = h
		return h, nil
	}
	names := make([]string, 0, len(calls))
	for name := range calls {
		names = append(names, name)
	}
	sort.Strings(names)
	for _, name := range names {
		if _, err := visit(name); err != nil {
			return 0, err
		}
	}
	return len(calls), nil
}

func templateCalls(n parse.Node, out []string) []string {
	switch n := n.(type) {
	case *parse.ListNode:
		if n != nil {
			for _, c := range n.Nodes {
				out = templateCalls(c, out)
			}
		}
	case *parse.TemplateNode:
		out = append(out, n.Name)
	case *parse.IfNode:
		out = templateCalls(n.List, templateCalls(n.ElseList, out))
	case *parse.WithNode:
		out = templateCalls(n.List, templateCalls(n.ElseList, out))
	case *parse.RangeNode:
		out = templateCalls(n.List, templateCalls(n.ElseList, out))
	}
	return out
}

// execution is one render of a compiled set.
type execution struct {
	bundle string
	c      *compiled
	g      *guard
	// trees holds the trees of tpl texts already instrumented.
	trees map[*parse.Tree]bool
}

// execute renders every file of the set with vals, and returns the text of
// each by template name.
func (c *compiled) execute(bundle string, g *guard, vals map[string]any) (map[string]string, error) {
	set, err := c.set.Clone()
	if err != nil {
		return nil, err
	}
	e := &execution{bundle: bundle, c: c, g: g, trees: map[*parse.Tree]bool{}}
	funcs := wrapAll(g)
	funcs[tickFunc] = func() (string, error) { return "", g.step(1) }
	funcs[printFunc] = e.print
	set.Funcs(funcs)
	e.bind(set)
	vals["Files"] = c.files
	out := make(map[string]string, len(c.renders))
	for _, name := range c.renders {
		vals["Template"] = map[string]any{"Name": name, "BasePath": path.Join(c.chartName, "templates")}
		w := &writer{g: g, output: true}
		if err := set.ExecuteTemplate(w, name, vals); err != nil {
			return nil, &fileError{file: name, err: err}
		}
		out[name] = strings.ReplaceAll(w.String(), "<no value>", "")
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
// bundle's own templates are.
func (e *execution) tpl(set *template.Template) func(string, any) (string, error) {
	return func(text string, vals any) (string, error) {
		if err := e.g.enter(); err != nil {
			return "", err
		}
		defer e.g.leave()
		if err := e.g.charge(int64(len(text))); err != nil {
			return "", err
		}
		if err := checkTemplate(e.bundle, rootName, text); err != nil {
			var rerr *Error
			if errors.As(err, &rerr) {
				err = rerr.Err
			}
			return "", fmt.Errorf("tpl %s: %w", quoteShort(text), err)
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
