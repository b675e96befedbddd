package main

import (
	"fmt"
	"sort"
	"strings"
)

// foreignReasons is the folder whose reasons are another project's: k0rdent
// sets them and Apiary reads them, so that they are never set here is no
// fault.
const foreignReasons = "api/k0rdent/"

// check lists what breaks the one vocabulary of reasons, one line each,
// sorted; none when the vocabulary holds:
//
//   - a reason declared and never set (but one of an exalsius-only list,
//     or one of k0rdent's), and a reason of an exalsius-only list that is set;
//   - a reason declared outside api/, or twice in api/;
//   - a reason set as a string literal, whether a constant has its value or not;
//   - a reason made by a conversion string(x) rather than commonv1.PhaseReason.
func check(s *Scan) []string {
	var out []string
	byValue := map[string][]Constant{}
	for _, c := range s.Constants {
		if c.Kind != "reason" {
			continue
		}
		name := fmt.Sprintf("%s.%s (%q)", c.Pkg, c.Name, c.Value)
		switch {
		case !strings.HasPrefix(c.Pkg, "api/"):
			out = append(out, fmt.Sprintf("reason %s is declared outside api/: declare it in the reasons.go of its API group", name))
			continue
		case strings.HasPrefix(c.Pkg+"/", foreignReasons):
			continue
		case c.ExalsiusOnly && len(c.Users) > 0:
			out = append(out, fmt.Sprintf("reason %s is exalsius-only but set in %s: move it out of the exalsius-only list",
				name, strings.Join(c.Users, ", ")))
		case !c.ExalsiusOnly && len(c.Users) == 0:
			out = append(out, fmt.Sprintf("reason %s is declared and never set: set it, delete it, or list it as exalsius-only", name))
		}
		byValue[c.Value] = append(byValue[c.Value], c)
	}
	for v, cs := range byValue {
		if len(cs) < 2 {
			continue
		}
		var names []string
		for _, c := range cs {
			names = append(names, c.Pkg+"."+c.Name)
		}
		sort.Strings(names)
		out = append(out, fmt.Sprintf("reason %q is declared more than once: %s", v, strings.Join(names, ", ")))
	}
	for _, l := range s.Literals {
		var declared []string
		for _, c := range s.Constants {
			if c.Value == l.Value && (c.Kind == "reason" || c.Kind == "phase") && !strings.HasPrefix(c.Pkg+"/", foreignReasons) {
				declared = append(declared, c.Pkg+"."+c.Name)
			}
		}
		sort.Strings(declared)
		for _, f := range l.Files {
			if len(declared) == 0 {
				out = append(out, fmt.Sprintf("%s: reason %q is set as a literal and declared nowhere: declare it in the reasons.go of its API group and set the constant", f, l.Value))
			} else {
				out = append(out, fmt.Sprintf("%s: reason %q is set as a literal: set the constant (%s)", f, l.Value, strings.Join(declared, ", ")))
			}
		}
	}
	for _, c := range s.Conversions {
		out = append(out, fmt.Sprintf("%s: reason is set from %s: name a phase with commonv1.PhaseReason, any other reason with its constant", c.File, c.Expr))
	}
	sort.Strings(out)
	return out
}
