package offline

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strconv"
	"strings"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/yaml"

	infrav1 "github.com/apiaryhq/apiary/api/infra/v1"
	workspacesv1 "github.com/apiaryhq/apiary/api/workspaces/v1"
)

// source is where an input object was read: a file and a 1-based document
// index within it.
type source struct {
	file string
	doc  int
}

func (s source) String() string { return s.file }

// inputs are the objects read from the files, in reading order.
type inputs struct {
	colonies    []input[*infrav1.Colony]
	classes     map[string]input[*workspacesv1.WorkspaceClass]
	deployments []input[*workspacesv1.WorkspaceDeployment]
	configMaps  map[string]input[*corev1.ConfigMap]
	secrets     map[string]input[*corev1.Secret]
}

// input is one decoded object with its source.
type input[T any] struct {
	src source
	obj T
}

// fieldError is a schema problem of an input object, printed as
// "file: Kind/name: field: message".
type fieldError struct {
	src   source
	kind  string
	name  string
	field string
	msg   string
}

func (e *fieldError) Error() string {
	return fmt.Sprintf("%s: %s/%s: %s: %s", e.src.file, e.kind, e.name, e.field, e.msg)
}

// expandFiles turns the -f arguments into a sorted, de-duplicated list of
// files: a folder gives its *.yaml, *.yml and *.json files (not recursive).
func expandFiles(args []string) ([]string, error) {
	var out []string
	seen := map[string]bool{}
	add := func(f string) {
		if !seen[f] {
			seen[f] = true
			out = append(out, f)
		}
	}
	for _, a := range args {
		info, err := os.Stat(a)
		if err != nil {
			return nil, fmt.Errorf("reading %s: %w", a, err)
		}
		if !info.IsDir() {
			add(a)
			continue
		}
		entries, err := os.ReadDir(a)
		if err != nil {
			return nil, fmt.Errorf("reading folder %s: %w", a, err)
		}
		var files []string
		for _, e := range entries {
			switch strings.ToLower(filepath.Ext(e.Name())) {
			case ".yaml", ".yml", ".json":
				if !e.IsDir() {
					files = append(files, filepath.Join(a, e.Name()))
				}
			}
		}
		if len(files) == 0 {
			return nil, fmt.Errorf("folder %s holds no manifests (no *.yaml, *.yml or *.json files)", a)
		}
		sort.Strings(files)
		for _, f := range files {
			add(f)
		}
	}
	return out, nil
}

// yamlDoc is one YAML document of a file with its first line.
type yamlDoc struct {
	index int
	line  int
	text  []byte
}

// splitYAML splits a file at "---" lines, keeping line numbers.
func splitYAML(data []byte) []yamlDoc {
	var docs []yamlDoc
	lines := strings.SplitAfter(string(data), "\n")
	cur := yamlDoc{line: 1}
	var b strings.Builder
	flush := func() {
		cur.text = []byte(b.String())
		docs = append(docs, cur)
		b.Reset()
	}
	for i, l := range lines {
		t := strings.TrimRight(l, "\r\n")
		if t == "---" || strings.HasPrefix(t, "--- ") || strings.HasPrefix(t, "---\t") {
			flush()
			cur = yamlDoc{line: i + 2}
			continue
		}
		b.WriteString(l)
	}
	flush()
	for i := range docs {
		docs[i].index = i + 1
	}
	return docs
}

var yamlLineRE = regexp.MustCompile(`line (\d+)`)

// decodeError names the file, document and line of a YAML problem.
func decodeError(file string, d yamlDoc, err error) error {
	msg := strings.TrimPrefix(err.Error(), "error converting YAML to JSON: ")
	msg = strings.TrimPrefix(msg, "yaml: ")
	line := d.line
	if m := yamlLineRE.FindStringSubmatchIndex(msg); m != nil {
		n, _ := strconv.Atoi(msg[m[2]:m[3]])
		line = d.line + n - 1
		msg = strings.TrimSpace(strings.TrimPrefix(msg[:m[0]]+msg[m[1]:], ":"))
	}
	return fmt.Errorf("%s:%d: document %d: %s", file, line, d.index, strings.TrimSpace(msg))
}

// load reads every document of files. Objects without a namespace get
// namespace, except cluster-scoped WorkspaceClasses. Documents of other
// kinds are skipped with a warning.
func load(files []string, namespace string, warn func(string, ...any)) (*inputs, error) {
	in := &inputs{
		classes:    map[string]input[*workspacesv1.WorkspaceClass]{},
		configMaps: map[string]input[*corev1.ConfigMap]{},
		secrets:    map[string]input[*corev1.Secret]{},
	}
	var errs []error
	for _, file := range files {
		data, err := os.ReadFile(file)
		if err != nil {
			errs = append(errs, fmt.Errorf("reading %s: %w", file, err))
			continue
		}
		for _, d := range splitYAML(data) {
			if err := in.decode(file, d, namespace, warn); err != nil {
				errs = append(errs, err)
			}
		}
	}
	return in, errors.Join(errs...)
}

func (in *inputs) decode(file string, d yamlDoc, namespace string, warn func(string, ...any)) error {
	j, err := yaml.YAMLToJSON(d.text)
	if err != nil {
		return decodeError(file, d, err)
	}
	j = bytes.TrimSpace(j)
	if len(j) == 0 || string(j) == "null" {
		return nil
	}
	var tm metav1.TypeMeta
	if err := yaml.Unmarshal(j, &tm); err != nil || j[0] != '{' {
		return fmt.Errorf("%s:%d: document %d: not a Kubernetes object", file, d.line, d.index)
	}
	src := source{file: file, doc: d.index}
	strict := func(into any) error {
		if err := yaml.UnmarshalStrict(j, into); err != nil {
			msg := strings.TrimPrefix(err.Error(), "error unmarshaling JSON: while decoding JSON: ")
			return fmt.Errorf("%s:%d: document %d: %s: %s", file, d.line, d.index, tm.Kind, msg)
		}
		return nil
	}
	key := func(m *metav1.ObjectMeta) string {
		if m.Namespace == "" {
			m.Namespace = namespace
		}
		return m.Namespace + "/" + m.Name
	}
	switch tm.GroupVersionKind() {
	case infrav1.GroupVersion.WithKind("Colony"):
		obj := &infrav1.Colony{}
		if err := strict(obj); err != nil {
			return err
		}
		key(&obj.ObjectMeta)
		in.colonies = append(in.colonies, input[*infrav1.Colony]{src, obj})
	case workspacesv1.GroupVersion.WithKind("WorkspaceClass"):
		obj := &workspacesv1.WorkspaceClass{}
		if err := strict(obj); err != nil {
			return err
		}
		if prev, dup := in.classes[obj.Name]; dup {
			return fmt.Errorf("%s: WorkspaceClass/%s: given twice (also in %s)", file, obj.Name, prev.src)
		}
		in.classes[obj.Name] = input[*workspacesv1.WorkspaceClass]{src, obj}
	case workspacesv1.GroupVersion.WithKind("WorkspaceDeployment"):
		obj := &workspacesv1.WorkspaceDeployment{}
		if err := strict(obj); err != nil {
			return err
		}
		key(&obj.ObjectMeta)
		in.deployments = append(in.deployments, input[*workspacesv1.WorkspaceDeployment]{src, obj})
	case corev1.SchemeGroupVersion.WithKind("ConfigMap"):
		obj := &corev1.ConfigMap{}
		if err := strict(obj); err != nil {
			return err
		}
		in.configMaps[key(&obj.ObjectMeta)] = input[*corev1.ConfigMap]{src, obj}
	case corev1.SchemeGroupVersion.WithKind("Secret"):
		obj := &corev1.Secret{}
		if err := strict(obj); err != nil {
			return err
		}
		for k, v := range obj.StringData {
			if obj.Data == nil {
				obj.Data = map[string][]byte{}
			}
			obj.Data[k] = []byte(v)
		}
		in.secrets[key(&obj.ObjectMeta)] = input[*corev1.Secret]{src, obj}
	default:
		warn("%s: document %d: skipping %s %s: apiary render reads Colony, WorkspaceClass, WorkspaceDeployment, ConfigMap and Secret",
			file, d.index, tm.APIVersion, tm.Kind)
	}
	return nil
}
