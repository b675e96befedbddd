// Package adopt moves the ownership of fields that another controller wrote
// with Create and Update (recorded in an object's managedFields under that
// controller's field manager, with operation Update) to a server-side apply
// field manager, so that an object Apiary adopts rather than creates ends up
// owned by Apiary as if Apiary had applied it from the start.
//
// Without the move, server-side apply leaves the previous writer a co-owner
// of every field whose value Apiary applies unchanged, and the sole owner of
// fields Apiary does not apply: a label Apiary stops rendering would then
// stay on the object forever. This is the problem Kubernetes documents for
// moving from client-side to server-side apply, where kubectl rewrites the
// managedFields entries of its client-side manager into its apply manager's
// entry; Plan does the same for the exalsius operator's manager, with a
// narrower scope, because a controller's default field manager is the name
// of its binary ("manager" for kubebuilder projects) and another controller
// (k0rdent's kcm, also "manager") may write the same object under that name:
//
//   - every field of the desired object that the previous writer owns moves,
//     wherever it is;
//   - of the fields the desired object does not set, only labels and
//     annotations move (so that those the previous writer set and Apiary
//     drops are removed by the next apply), and only when their key is not
//     in a domain of Kubernetes, Cluster API, k0rdent or Sveltos;
//   - nothing else moves: finalizers, status, and spec fields Apiary does
//     not render stay with their owner and are left alone by Apiary.
//
// Plan is a pure function of the managedFields and the desired object.
// Adopted turns the live object, the desired one and Plan's result into the
// object of a single Update (with the live resourceVersion as precondition,
// so that a write by anyone in between makes it fail with a conflict): the
// desired fields set, the previous writer's labels and annotations that the
// desired object drops (Result.Stale) removed, the planned managed fields.
// Adopting an object is then one write. The API server records the fields
// that Update changed under the apply manager's own Update entry; a
// Migration with Self moves that entry whole to the apply entry, and Patch
// writes only managed fields, also with a resourceVersion precondition, so
// that the apply manager's next apply owns everything it renders.
package adopt
