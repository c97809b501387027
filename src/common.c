/* Helpers shared by backends and the driver: errors, key/value lists, MPI info and datatypes,
 * contiguous runs of a block. */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "iobench.h"

int iob_fail(iob_ctx *c, const char *fmt, ...)
{
    if (c->errmsg[0] == '\0') {
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(c->errmsg, sizeof c->errmsg, fmt, ap);
        va_end(ap);
        if (c->errmsg[0] == '\0')
            snprintf(c->errmsg, sizeof c->errmsg, "unknown error");
    }
    return IOB_FAIL;
}

int iob_mpi_check(iob_ctx *c, int rc, const char *call)
{
    if (rc == MPI_SUCCESS)
        return IOB_OK;
    char msg[MPI_MAX_ERROR_STRING];
    int len = 0;
    if (MPI_Error_string(rc, msg, &len) != MPI_SUCCESS)
        snprintf(msg, sizeof msg, "MPI error code %d", rc);
    return iob_fail(c, "%s: %s", call, msg);
}

const char *iob_kv_get(const iob_kvlist *l, const char *key)
{
    for (int i = 0; i < l->n; i++)
        if (strcmp(l->kv[i].key, key) == 0)
            return l->kv[i].value;
    return NULL;
}

void iob_kv_put(iob_kvlist *l, const char *key, const char *value)
{
    for (int i = 0; i < l->n; i++)
        if (strcmp(l->kv[i].key, key) == 0) {
            free(l->kv[i].value);
            l->kv[i].value = strdup(value);
            return;
        }
    if (l->n >= IOB_MAXKV)
        return; /* more keys than any library reports; the first 64 are kept */
    l->kv[l->n].key = strdup(key);
    l->kv[l->n].value = strdup(value);
    l->n++;
}

typedef struct { char *packed; int to_packed; } pack_arg;

static int pack_run(void *a, int64_t off, void *mem, int64_t bytes)
{
    pack_arg *p = a;
    if (p->to_packed)
        memcpy(p->packed + off, mem, (size_t)bytes);
    else
        memcpy(mem, p->packed + off, (size_t)bytes);
    return 0;
}

void iob_var_pack(const iob_var *v, void *packed, int to_packed)
{
    iob_var whole = *v; /* the packed block is a "file" holding just this block */
    for (int d = 0; d < v->ndims; d++)
        whole.gdims[d] = v->count[d], whole.start[d] = 0;
    whole.file_offset = 0;
    pack_arg p = {packed, to_packed};
    iob_var_foreach_run(&whole, pack_run, &p);
}

int iob_alignment(const char *v, int64_t *thresh, int64_t *align)
{
    const char *comma = strchr(v, ',');
    char *end;
    *thresh = 1;
    if (comma) {
        if (*v < '0' || *v > '9')
            return -1;
        errno = 0;
        *thresh = strtoll(v, &end, 10);
        if (errno || end != comma)
            return -1;
    }
    const char *a = comma ? comma + 1 : v;
    errno = 0;
    *align = strtoll(a, &end, 10);
    if (*a < '0' || *a > '9' || errno || *end || *align <= 0 || (*align & (*align - 1)))
        return -1;
    return 0;
}

int iob_fsync_path(iob_ctx *c, const char *path)
{
    int fd = open(path, O_RDONLY);
    if (fd < 0)
        return iob_fail(c, "open(%s) for fsync: %s", path, strerror(errno));
    int rc = fsync(fd), e = errno;
    close(fd);
    return rc == 0 ? IOB_OK : iob_fail(c, "fsync(%s): %s", path, strerror(e));
}

MPI_Info iob_make_info(const iob_opts *o)
{
    if (o->hints.n == 0)
        return MPI_INFO_NULL;
    MPI_Info info;
    MPI_Info_create(&info);
    for (int i = 0; i < o->hints.n; i++)
        MPI_Info_set(info, o->hints.kv[i].key, o->hints.kv[i].value);
    return info;
}

void iob_record_file_info(iob_ctx *c, MPI_File fh)
{
    MPI_Info info;
    if (MPI_File_get_info(fh, &info) != MPI_SUCCESS || info == MPI_INFO_NULL)
        return;
    int nkeys = 0;
    MPI_Info_get_nkeys(info, &nkeys);
    for (int i = 0; i < nkeys; i++) {
        char key[MPI_MAX_INFO_KEY + 1], val[MPI_MAX_INFO_VAL + 1];
        int flag = 0;
        MPI_Info_get_nthkey(info, i, key);
        MPI_Info_get(info, key, MPI_MAX_INFO_VAL, val, &flag);
        if (flag)
            iob_kv_put(&c->hints_in_effect, key, val);
    }
    MPI_Info_free(&info);
}

int64_t iob_var_count_elems(const iob_var *v)
{
    int64_t n = 1;
    for (int d = 0; d < v->ndims; d++)
        n *= v->count[d];
    return n;
}

int64_t iob_var_global_elems(const iob_var *v)
{
    int64_t n = 1;
    for (int d = 0; d < v->ndims; d++)
        n *= v->gdims[d];
    return n;
}

/* The element type: one 8-byte value, or a contiguous compound of nfields doubles. */
static int elem_type(iob_ctx *c, const iob_var *v, MPI_Datatype *t)
{
    if (v->nfields == 1) {
        *t = v->dtype == IOB_INT64 ? MPI_INT64_T : MPI_DOUBLE;
        return IOB_OK;
    }
    if (iob_mpi_check(c, MPI_Type_contiguous(v->nfields, MPI_DOUBLE, t), "MPI_Type_contiguous"))
        return IOB_FAIL;
    return IOB_OK;
}

/* Block `sub` at `off` inside an array `full` (C order). MPI_Type_create_subarray takes int extents;
 * when an extent exceeds INT_MAX (or a block is empty) the type is built from hvectors with 64-bit
 * byte strides, then placed at its byte offset and resized to the whole array's extent. */
static int block_type(iob_ctx *c, const iob_var *v, const int64_t *full, const int64_t *sub,
                      const int64_t *off, MPI_Datatype *out)
{
    MPI_Datatype el;
    if (elem_type(c, v, &el))
        return IOB_FAIL;
    int nd = v->ndims, small = 1;
    for (int d = 0; d < nd; d++)
        if (full[d] > INT_MAX || sub[d] < 1 || sub[d] > INT_MAX)
            small = 0;
#ifdef IOB_FORCE_HVECTOR /* test builds: exercise the 64-bit path with small arrays */
    small = 0;
#endif
    int rc;
    if (small) {
        int f[IOB_MAXDIMS], s[IOB_MAXDIMS], o[IOB_MAXDIMS];
        for (int d = 0; d < nd; d++) {
            f[d] = (int)full[d];
            s[d] = (int)sub[d];
            o[d] = (int)off[d];
        }
        rc = iob_mpi_check(c, MPI_Type_create_subarray(nd, f, s, o, MPI_ORDER_C, el, out),
                           "MPI_Type_create_subarray");
    } else {
        MPI_Aint eb = (MPI_Aint)iob_var_elem_bytes(v), stride = eb, disp = 0, total = eb;
        MPI_Datatype t = el, nt;
        rc = IOB_OK;
        for (int d = nd - 1; d >= 0 && rc == IOB_OK; d--) {
            if (sub[d] > INT_MAX)
                return iob_fail(c, "block edge %lld exceeds INT_MAX elements", (long long)sub[d]);
            rc = iob_mpi_check(c, MPI_Type_create_hvector((int)sub[d], 1, stride, t, &nt),
                               "MPI_Type_create_hvector");
            if (t != el)
                MPI_Type_free(&t);
            t = nt;
            disp += (MPI_Aint)off[d] * stride;
            stride *= (MPI_Aint)full[d];
        }
        total = stride;
        if (rc == IOB_OK) {
            int one = 1;
            MPI_Datatype placed;
            rc = iob_mpi_check(c, MPI_Type_create_hindexed(1, &one, &disp, t, &placed),
                               "MPI_Type_create_hindexed");
            MPI_Type_free(&t);
            if (rc == IOB_OK) {
                rc = iob_mpi_check(c, MPI_Type_create_resized(placed, 0, total, out),
                                   "MPI_Type_create_resized");
                MPI_Type_free(&placed);
            }
        }
    }
    if (v->nfields > 1)
        MPI_Type_free(&el);
    if (rc == IOB_OK)
        rc = iob_mpi_check(c, MPI_Type_commit(out), "MPI_Type_commit");
    return rc;
}

int iob_var_filetype(iob_ctx *c, const iob_var *v, MPI_Datatype *t)
{
    return block_type(c, v, v->gdims, v->count, v->start, t);
}

int iob_var_memtype(iob_ctx *c, const iob_var *v, MPI_Datatype *t)
{
    return block_type(c, v, v->mdims, v->count, v->moff, t);
}

int iob_var_foreach_run(const iob_var *v, iob_run_fn fn, void *arg)
{
    int nd = v->ndims;
    int64_t eb = iob_var_elem_bytes(v);
    if (iob_var_count_elems(v) == 0)
        return 0;
    /* r = first dim of the run: every later dim is whole in the file and in memory. */
    int r = nd - 1;
    while (r > 0 && v->count[r] == v->gdims[r] && v->count[r] == v->mdims[r])
        r--;
    int64_t run = 1;
    for (int d = r; d < nd; d++)
        run *= v->count[d];
    int64_t idx[IOB_MAXDIMS] = {0};
    for (;;) {
        int64_t foff = 0, moff = 0;
        for (int d = 0; d < nd; d++) {
            int64_t i = d < r ? idx[d] : 0;
            foff = foff * v->gdims[d] + v->start[d] + i;
            moff = moff * v->mdims[d] + v->moff[d] + i;
        }
        int rc = fn(arg, v->file_offset + foff * eb, (char *)v->buf + moff * eb, run * eb);
        if (rc)
            return rc;
        int d = r - 1;
        while (d >= 0 && ++idx[d] == v->count[d])
            idx[d--] = 0;
        if (d < 0)
            return 0;
    }
}
