// Package v1 holds the API types shared by Apiary's resource groups: references
// to template bundles, the inventory of delivered objects, and the condition
// types and reasons every Apiary object reports. It defines no kinds.
//
// +kubebuilder:object:generate=true
package v1
