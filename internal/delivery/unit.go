package delivery

import "context"

// unitKey is the context key of WithUnit.
type unitKey struct{}

// WithUnit returns ctx carrying the unit of work (the Ref of an
// internal/shard Unit) that the owners delivered with it belong to. With
// sharding, the Git sink records it on every file it commits
// (AnnotationShardUnit) and on every change it queues, so that a shard
// sweeps only its own units' files and hands a unit over only once its
// changes of the unit are pushed. An empty unit marks what is delivered
// with ctx as of no unit: a file several shards write alike (a regional
// cluster's routes Kustomization), which no sweep removes.
func WithUnit(ctx context.Context, unit string) context.Context {
	if unit == "" && UnitOf(ctx) == "" {
		return ctx
	}
	return context.WithValue(ctx, unitKey{}, unit)
}

// UnitOf is the unit WithUnit put in ctx, "" when none.
func UnitOf(ctx context.Context) string {
	u, _ := ctx.Value(unitKey{}).(string)
	return u
}
