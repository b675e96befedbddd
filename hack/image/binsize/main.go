// Command binsize says how much of a Go binary's code each module is: it
// sums the sizes of the function symbols of an unstripped ELF binary (build
// it without -ldflags "-s -w") under the longest module path that prefixes
// each symbol, using the module list the binary carries. `make binary-size`
// runs it; docs/release.md quotes its output.
package main

import (
	"debug/buildinfo"
	"debug/elf"
	"fmt"
	"os"
	"sort"
	"strings"
)

func main() {
	if len(os.Args) != 3 {
		fmt.Fprintln(os.Stderr, "usage: binsize BINARY TOP")
		os.Exit(2)
	}
	var top int
	if _, err := fmt.Sscan(os.Args[2], &top); err != nil {
		fmt.Fprintf(os.Stderr, "binsize: TOP: %v\n", err)
		os.Exit(2)
	}
	if err := run(os.Args[1], top); err != nil {
		fmt.Fprintf(os.Stderr, "binsize: %v\n", err)
		os.Exit(1)
	}
}

func run(path string, top int) error {
	info, err := buildinfo.ReadFile(path)
	if err != nil {
		return fmt.Errorf("reading build info: %w", err)
	}
	modules := []string{info.Main.Path}
	for _, d := range info.Deps {
		modules = append(modules, d.Path)
	}
	// Longest first, so the first prefix that matches is the module.
	sort.Slice(modules, func(i, j int) bool { return len(modules[i]) > len(modules[j]) })

	f, err := elf.Open(path)
	if err != nil {
		return fmt.Errorf("opening %s: %w", path, err)
	}
	defer f.Close()
	syms, err := f.Symbols()
	if err != nil {
		return fmt.Errorf("reading symbols (is the binary stripped?): %w", err)
	}
	sizes := map[string]uint64{}
	var total uint64
	for _, s := range syms {
		if elf.ST_TYPE(s.Info) != elf.STT_FUNC || s.Size == 0 {
			continue
		}
		total += s.Size
		sizes[owner(s.Name, modules)] += s.Size
	}
	names := make([]string, 0, len(sizes))
	for n := range sizes {
		names = append(names, n)
	}
	sort.Slice(names, func(i, j int) bool { return sizes[names[i]] > sizes[names[j]] })
	fmt.Printf("%d modules; function code %.2f MB\n", len(modules)-1, float64(total)/1e6)
	for i, n := range names {
		if i == top {
			break
		}
		fmt.Printf("%8.2f MB %5.1f%%  %s\n", float64(sizes[n])/1e6, 100*float64(sizes[n])/float64(total), n)
	}
	return nil
}

// owner is the module a symbol belongs to, "standard library" or, for the
// linker's and compiler's own symbols, "runtime-generated".
func owner(sym string, modules []string) string {
	for _, m := range modules {
		if strings.HasPrefix(sym, m+".") || strings.HasPrefix(sym, m+"/") {
			return m
		}
	}
	first, _, _ := strings.Cut(sym, ".")
	if strings.Contains(first, "/") && strings.Contains(strings.SplitN(first, "/", 2)[0], ".") {
		return "other: " + first
	}
	if strings.HasPrefix(sym, "go:") || strings.HasPrefix(sym, "type:") || !strings.Contains(sym, ".") {
		return "runtime-generated"
	}
	return "standard library"
}
