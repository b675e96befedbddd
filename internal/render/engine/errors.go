package engine

import (
	"errors"
	"regexp"
	"strconv"
	"strings"
)

// Error is a template that fails to compile or to render.
type Error struct {
	// File is the template's path in the chart (templates/x.yaml), or
	// empty when no file is to blame.
	File string
	// Line is the 1-based line in File, or 0 when unknown.
	Line int
	// Err is the cause, its message meant for users. It wraps
	// ErrBudgetExceeded, ErrOutputTooLarge or ErrTimeout when the render
	// went over its Limits.
	Err error
}

// Error returns "FILE:LINE: cause", or less when File or Line is unknown.
func (e *Error) Error() string {
	var b strings.Builder
	if e.File != "" {
		b.WriteString(e.File)
		if e.Line > 0 {
			b.WriteString(":")
			b.WriteString(strconv.Itoa(e.Line))
		}
		b.WriteString(": ")
	}
	if e.Err != nil {
		b.WriteString(e.Err.Error())
	}
	return b.String()
}

// Unwrap returns the cause.
func (e *Error) Unwrap() error { return e.Err }

// "template: NAME:LINE[:COL]: " as text/template writes it; the last one in a
// message is the innermost (an include'd or tpl'd template).
var execLocRE = regexp.MustCompile(`template: ([^\s:]+):(\d+)(?::\d+)?: `)

// templateError turns an error of an execution into an *Error naming the
// innermost file and line of the chart. When the guard stopped the
// execution, the cause is the limit it hit.
func (c *Templates) templateError(g *guard, err error) *Error {
	msg := err.Error()
	file, line, detail := "", 0, msg
	var last []int
	for _, m := range execLocRE.FindAllStringSubmatchIndex(msg, -1) {
		// Text given to tpl is parsed as the template "gotpl": keep the
		// innermost location that is a file of the chart.
		if strings.HasPrefix(msg[m[2]:m[3]], c.chartName+"/") {
			last = m
		}
	}
	if m := last; m != nil {
		file, detail = msg[m[2]:m[3]], msg[m[1]:]
		line, _ = strconv.Atoi(msg[m[4]:m[5]])
	}
	var at *fileError
	if file == "" && errors.As(err, &at) {
		file = at.file
	}
	file = c.trimChart(file)
	var fail *failError
	switch {
	case g.err != nil:
		return &Error{File: file, Line: line, Err: g.err}
	case errors.As(err, &fail):
		return &Error{File: file, Line: line, Err: fail}
	}
	detail = strings.ReplaceAll(detail, c.chartName+"/templates/", "templates/")
	return &Error{File: file, Line: line, Err: &detailError{sentinel: err, msg: detail}}
}

// fileError is an error while rendering a file.
type fileError struct {
	file string
	err  error
}

func (e *fileError) Error() string { return e.err.Error() }
func (e *fileError) Unwrap() error { return e.err }

// detailError is an error message that wraps a sentinel error.
type detailError struct {
	sentinel error
	msg      string
}

func (e *detailError) Error() string { return e.msg }
func (e *detailError) Unwrap() error { return e.sentinel }
