// Package controllertest is the shared world of the controllers' envtests:
// Main starts the control planes, the k0rdent stand-in and Apiary's manager
// once per test binary, and the helpers create the objects the suites of
// every kind need (clusters, classes, workspaces, Colonies) and wait for
// what the controllers make of them.
//
// Each kind's package has its envtests beside it and a suite_test.go that
// is one call:
//
//	func TestMain(m *testing.M) { controllertest.Main(m) }
package controllertest
