/* Read placement: which block each rank reads, so that reads come from another node's data.
 *
 * IOR -C reads block (rank + shift) % ranks with one shift for every rank: its tasks per node for a
 * block (by-slot) mapping, 1 for a cyclic (by-node) one. A constant shift is a permutation of the
 * blocks for any layout, so every block is read exactly once. IOR's choice can still land on the
 * writer's node (uneven or mixed layouts); here the shift is the first of IOR's, then 1, 2, ..., that
 * sends every rank to another node, else the one that sends the most ranks there (a node holding more
 * than half the ranks leaves no way to send all of them elsewhere). Computed once from the node layout
 * (MPI_COMM_TYPE_SHARED), outside any timer; the ranks left on their own node are counted. */
#include <stdlib.h>
#include "driver.h"

/* Ranks r whose block (r + s) % n lives on another node than r. */
static int cross_count(const int *node_of, int n, int s)
{
    int k = 0;
    for (int r = 0; r < n; r++)
        k += node_of[(r + s) % n] != node_of[r];
    return k;
}

int iob_placement(iob_ctx *c, int *ppn, int *cross, int **node_index)
{
    MPI_Comm node;
    int leader_rank = c->rank, n = c->nranks;
    MPI_Comm_split_type(c->comm, MPI_COMM_TYPE_SHARED, 0, MPI_INFO_NULL, &node);
    MPI_Comm_rank(node, &c->node_rank);
    MPI_Comm_size(node, ppn);
    MPI_Bcast(&leader_rank, 1, MPI_INT, 0, node); /* a node's id: the world rank of its first rank */
    MPI_Comm_free(&node);
    int leader = c->node_rank == 0;
    MPI_Allreduce(&leader, &c->nodes, 1, MPI_INT, MPI_SUM, c->comm);
    int *node_of = malloc(sizeof(int) * (size_t)n);
    if (!node_of)
        return iob_fail(c, "placement: out of memory for %d ranks", n);
    MPI_Allgather(&leader_rank, 1, MPI_INT, node_of, 1, MPI_INT, c->comm);
    c->read_shift = 0;
    *cross = 0;
    if (c->nodes > 1) {
        int on_node0 = 0;
        for (int r = 0; r < n; r++)
            on_node0 += node_of[r] == node_of[0];
        int ior = n > 1 && node_of[1] == node_of[0] ? on_node0 : 1; /* IOR's QueryNodeMapping */
        c->read_shift = ior % n;
        *cross = cross_count(node_of, n, c->read_shift);
        for (int s = 1; s < n && *cross < n; s++) {
            int k = cross_count(node_of, n, s);
            if (k > *cross)
                c->read_shift = s, *cross = k;
        }
    }
    /* node of each rank as 0, 1, ... in order of first appearance (the JSON's read_placement) */
    for (int r = 0, k = 0; r < n; r++)
        if (node_of[r] >= 0) { /* a leader's world rank, not yet renumbered: a new node */
            int id = node_of[r];
            for (int q = r; q < n; q++)
                if (node_of[q] == id)
                    node_of[q] = -1 - k;
            k++;
        }
    for (int r = 0; r < n; r++)
        node_of[r] = -1 - node_of[r];
    *node_index = node_of;
    return IOB_OK;
}
