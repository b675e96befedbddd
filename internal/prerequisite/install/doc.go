// Package install installs the prerequisites of workspaces' classes on
// their child clusters, once per prerequisite and cluster, and tells how
// each one is doing for a workspace (Installer.Ensure). The workspace
// controller calls it for every workspace whose class has prerequisites; the
// prerequisite controller removes the installs no workspace needs any more.
// Both share the Writes of package prerequisite, which serialises the
// decisions about one install; neither controller imports the other.
package install
