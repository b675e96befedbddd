package engine

import (
	"fmt"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"text/template"
	"text/template/parse"
)

// forbiddenFuncs are template functions templates may not call: lookup reads
// the cluster, the others give a different output at every render, which
// would change the objects (and the Git commits) for the same input.
var forbiddenFuncs = map[string]string{
	"lookup":                   "bundles cannot read the cluster",
	"now":                      "it changes at every render",
	"ago":                      "it changes at every render",
	"randAlpha":                "it changes at every render",
	"randAlphaNum":             "it changes at every render",
	"randAscii":                "it changes at every render",
	"randNumeric":              "it changes at every render",
	"randBytes":                "it changes at every render",
	"randInt":                  "it changes at every render",
	"shuffle":                  "it changes at every render",
	"uuidv4":                   "it changes at every render",
	"bcrypt":                   "it changes at every render",
	"htpasswd":                 "it changes at every render",
	"encryptAES":               "it changes at every render",
	"genPrivateKey":            "it changes at every render",
	"genCA":                    "it changes at every render",
	"genCAWithKey":             "it changes at every render",
	"genSelfSignedCert":        "it changes at every render",
	"genSelfSignedCertWithKey": "it changes at every render",
	"genSignedCert":            "it changes at every render",
	"genSignedCertWithKey":     "it changes at every render",
	"getHostByName":            "bundles cannot use the network",
	"derivePassword":           "each call takes 32 MiB of memory",
}

// checkTemplate parses one template file and refuses syntax errors and
// forbidden functions: the *Error names the file and line.
func checkTemplate(file, text string) *Error {
	trees := map[string]*parse.Tree{}
	t := parse.New(file)
	t.Mode = parse.SkipFuncCheck
	if _, err := t.Parse(text, "", "", trees); err != nil {
		line, msg := parseErrorLocation(err.Error())
		return &Error{File: file, Line: line, Err: fmt.Errorf("%s", msg)}
	}
	// Report the first forbidden call in the file, whatever tree holds it.
	var found *parse.IdentifierNode
	for _, tree := range trees {
		if tree.Root == nil {
			continue
		}
		walkNodes(tree.Root, func(n parse.Node) {
			id, ok := n.(*parse.IdentifierNode)
			if !ok {
				return
			}
			if _, bad := forbiddenFuncs[id.Ident]; bad && (found == nil || id.Pos < found.Pos) {
				found = id
			}
		})
	}
	if found != nil {
		line := 1 + strings.Count(text[:min(int(found.Pos), len(text))], "\n")
		return &Error{File: file, Line: line, Err: fmt.Errorf("function %q is not allowed: %s", found.Ident, forbiddenFuncs[found.Ident])}
	}
	return nil
}

// walkNodes calls fn on n and every node below it.
func walkNodes(n parse.Node, fn func(parse.Node)) {
	if n == nil {
		return
	}
	fn(n)
	switch t := n.(type) {
	case *parse.ListNode:
		if t == nil {
			return
		}
		for _, c := range t.Nodes {
			walkNodes(c, fn)
		}
	case *parse.ActionNode:
		walkPipe(t.Pipe, fn)
	case *parse.IfNode:
		walkBranch(&t.BranchNode, fn)
	case *parse.RangeNode:
		walkBranch(&t.BranchNode, fn)
	case *parse.WithNode:
		walkBranch(&t.BranchNode, fn)
	case *parse.TemplateNode:
		walkPipe(t.Pipe, fn)
	case *parse.PipeNode:
		walkPipe(t, fn)
	case *parse.CommandNode:
		for _, a := range t.Args {
			walkNodes(a, fn)
		}
	case *parse.ChainNode:
		walkNodes(t.Node, fn)
	}
}

func walkBranch(b *parse.BranchNode, fn func(parse.Node)) {
	walkPipe(b.Pipe, fn)
	if b.List != nil {
		walkNodes(b.List, fn)
	}
	if b.ElseList != nil {
		walkNodes(b.ElseList, fn)
	}
}

func walkPipe(p *parse.PipeNode, fn func(parse.Node)) {
	if p == nil {
		return
	}
	for _, c := range p.Cmds {
		walkNodes(c, fn)
	}
}

var parseLocRE = regexp.MustCompile(`^template: [^:]*:(\d+):\s*(.*)$`)

// parseErrorLocation splits a text/template parse error
// ("template: NAME:LINE: MSG") into its line and message.
func parseErrorLocation(msg string) (int, string) {
	if m := parseLocRE.FindStringSubmatch(msg); m != nil {
		line, _ := strconv.Atoi(m[1])
		return line, m[2]
	}
	return 0, msg
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
