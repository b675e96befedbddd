// Package tenantquota is the controller of the TenantQuota kind
// (quota.apiary.dev): it owns a TenantQuota's status, its ledger of charges
// kept true to the workspaces of the namespaces it selects, its usage and its
// conditions (Ready, WithinLimits, with the reasons of api/quota/v1alpha1).
// Workspaces charge themselves when admitted, through the same Ledger
// (internal/quota). It imports no other kind's package (kinds_test.go).
package tenantquota
