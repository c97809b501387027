/* iobench: the seams between the driver, the workload patterns and the I/O backends.
 *
 * A pattern describes WHAT is written: a list of variables, each a global N-d array (1..3 dims) of
 * 8-byte elements (double or int64, or a compound of several named doubles), of which this rank owns
 * one block, held in memory inside a possibly larger buffer (e.g. benchio's halo).
 * A backend describes HOW it reaches storage: open / write / read / sync / close on those variables.
 * The driver (main.c) times barrier -> open -> access -> sync -> close -> barrier and writes the JSON.
 *
 * Adding a backend = one backend_<name>.c defining `const iob_backend iob_backend_<name>` plus one
 * line in backends.c (IOR's aiori-*.c is the model). Adding a pattern = one pattern_<name>.c plus one
 * line in patterns.c (and its name in CMakeLists.txt's source list). Each declares its --param keys
 * once, in an iob_option table: parsing, validation and --help come from it (opttable.c).
 */
#ifndef IOBENCH_H
#define IOBENCH_H

#include <mpi.h>
#include <stddef.h>
#include <stdint.h>

#define IOB_VERSION "0.1.0"
#define IOB_SCHEMA "iobench-result/1"
#define IOB_MAXDIMS 3
#define IOB_MAXKV 64
#define IOB_ERRLEN 1024

/* exit statuses (docs/CONTRACT.md) */
enum { IOB_OK = 0, IOB_FAIL = 1, IOB_BADINPUT = 2 };

typedef struct { char *key; char *value; } iob_kv;
typedef struct { int n; iob_kv kv[IOB_MAXKV]; } iob_kvlist;

const char *iob_kv_get(const iob_kvlist *l, const char *key); /* NULL if absent */

typedef enum { IOB_DOUBLE = 0, IOB_INT64 = 1 } iob_dtype;

/* One --param key, declared once by its owner (the driver, a backend, a pattern) in a table ending
 * with {0}, as IOR's option_help tables. opttable.c rejects what the table does not accept (one line,
 * exit 2, before anything is created) and prints the table in --help; a backend's or pattern's check()
 * only judges what one key cannot (combinations, the rank count, the file system). */
typedef enum {
    IOB_OPT_INT,    /* decimal digits, min..max (and `special`, e.g. "-1": the library decides) */
    IOB_OPT_SIZE,   /* bytes: digits with an optional k/m/g/t suffix (powers of 1024), min..max */
    IOB_OPT_BOOL,   /* 0 or 1 */
    IOB_OPT_STRING, /* passed on as given (`valid`, when set, judges it) */
    IOB_OPT_ENUM,   /* one of `values` */
} iob_opt_type;

typedef struct {
    const char *key;
    iob_opt_type type;
    const char *dflt;    /* the value when absent, as it would be given; NULL: computed or the library's (help) */
    const char *help;    /* one line: what it does */
    int64_t min, max;    /* INT, SIZE: accepted range (max 0: INT64_MAX) */
    const char *values;  /* ENUM: "small|large" */
    const char *modes;   /* backend keys: the modes using it, "bp5|bp4" (NULL: every mode) */
    const char *special; /* INT: one value accepted outside min..max */
    int (*valid)(const char *value); /* STRING: nonzero when acceptable */
    const char *allowed; /* what is accepted, for messages and --help (default: from type and range) */
} iob_option;


struct iob_ctx;

/* One variable of a pattern. Element = nfields 8-byte values (nfields > 1: compound, field names). */
typedef struct iob_var {
    char name[64];
    iob_dtype dtype;
    int nfields;                      /* 1 = scalar element; >1 = compound of doubles */
    const char *const *field_names;   /* nfields names when nfields > 1 */
    int ndims;                        /* 1..IOB_MAXDIMS */
    int64_t gdims[IOB_MAXDIMS];       /* global extent, in elements, C order */
    int64_t start[IOB_MAXDIMS];       /* this rank's block start in the global array */
    int64_t count[IOB_MAXDIMS];       /* this rank's block extent (may be 0: rank owns nothing) */
    int64_t mdims[IOB_MAXDIMS];       /* memory buffer extent (count + halo) */
    int64_t moff[IOB_MAXDIMS];        /* offset of the block inside the memory buffer */
    void *buf;                        /* memory buffer, mdims elements of nfields*8 bytes */
    int64_t file_offset;              /* byte offset of this variable in a shared flat file */
    int64_t xfer;                     /* bytes per access call, in file order (IOR's transfer size,
                                       * pattern ior; 1-D, no halo, divides the block); 0 = the
                                       * backend's choice. posix, mpiio, hdf5 and sionlib
                                       * (independent) honour it; adios2 buffers puts anyway. */
    /* Set by pattern ior for a backend with one_xfer_buffer: buf is then ONE buffer of xfer bytes (as
     * IOR's), xfer_fill(c, v, off) makes it hold the block's bytes at byte offset off right before each
     * write call (rewriting only what differs between transfers), and xfer_read (may be NULL) looks at
     * them right after each read call. NULL: buf holds the whole block. */
    void (*xfer_fill)(struct iob_ctx *c, const struct iob_var *v, int64_t off);
    void (*xfer_read)(struct iob_ctx *c, const struct iob_var *v, int64_t off);
    /* Pattern ior with random=1 (IOR -z): the i-th call accesses transfer order[i] of the block
     * (a permutation of 0 .. count*elem/xfer - 1). NULL: file order. Honoured where xfer is. */
    const int64_t *order;
} iob_var;

static inline int64_t iob_var_elem_bytes(const iob_var *v) { return 8 * (int64_t)v->nfields; }
int64_t iob_var_count_elems(const iob_var *v);   /* product of count[] */
int64_t iob_var_global_elems(const iob_var *v);  /* product of gdims[] */

/* Parsed command line. */
typedef struct {
    const char *backend, *mode, *pattern, *dir, *name, *json_path;
    int64_t size[IOB_MAXDIMS];
    int nsize;                 /* 1 or 3 numbers given to --size */
    int do_write, do_read;     /* from --phase */
    int repeat, verify, keep, quiet;
    iob_kvlist hints, params;
    char command[4096];        /* exact argv, shell-quoted */
} iob_opts;

/* The value of --param KEY: as given, else the declaring table's dflt (NULL / 0 when it has none).
 * KEY must be declared by the driver, the run's backend or its pattern. int: INT, SIZE, BOOL keys. */
const char *iob_param_str(const iob_opts *o, const char *key);
int64_t iob_param_int(const iob_opts *o, const char *key);
/* KEY's entry in table t (NULL: not there). */
const iob_option *iob_option_find(const iob_option *t, const char *key);

/* Per-run context shared by driver, pattern and backend. */
typedef struct iob_ctx {
    const iob_opts *opt;
    MPI_Comm comm;
    int rank, nranks, nodes, node_rank; /* node_rank: rank within its node */
    int io_rank;               /* whose block this rank accesses now (rank shift on reads) */
    int read_shift;            /* reads access block (rank + read_shift) % nranks (placement.c) */
    int barriers;              /* --param barriers=1: agree between open/access/close (IOR -g) */
    int read_direct;           /* timed reads with O_DIRECT (a pagepool-like cache, own-node reads) */
    int64_t moved;             /* bytes this rank's backend calls returned in the current phase */
    int rep;                   /* current repetition */
    char path[4096];           /* data path of this repetition (file or directory; backend may suffix) */
    int nvars;
    iob_var *vars;
    void *pattern_state;       /* owned by the pattern */
    void *backend_state;       /* owned by the backend between open and close */
    iob_kvlist hints_in_effect;/* filled by the backend (MPI_File_get_info), strings owned here */
    char sync_method[128];     /* set by the backend */
    char errmsg[IOB_ERRLEN];   /* first error: "call(arg): library message" */
} iob_ctx;

/* Record an error in ctx->errmsg (first one wins) and return IOB_FAIL. printf-style. */
int iob_fail(iob_ctx *c, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* Check an MPI return code; on error record "call: MPI error string". */
int iob_mpi_check(iob_ctx *c, int rc, const char *call);
/* Store a key/value copy in a list (used for hints in effect). */
void iob_kv_put(iob_kvlist *l, const char *key, const char *value);

/* Copy a variable's block between its (possibly halo'd) buffer and `packed`, the block alone in C
 * order (to_packed: buffer -> packed; else packed -> buffer). */
void iob_var_pack(const iob_var *v, void *packed, int to_packed);
/* HDF5's alignment=ALIGN or THRESH,ALIGN (hdf5 backend's key, read by patterns hacc and mddatasets
 * too): 0 and the two numbers (THRESH 1 when absent) when ALIGN is a power of two, else -1. */
int iob_alignment(const char *v, int64_t *thresh, int64_t *align);
/* open(path), fsync, close, outside any backend's handle; on error "open(path) for fsync: ..." or
 * "fsync(path): ...". */
int iob_fsync_path(iob_ctx *c, const char *path);

/* Build an MPI_Info from --hint options (MPI_INFO_NULL when none); caller frees if not NULL. */
MPI_Info iob_make_info(const iob_opts *o);
/* Read back hints in effect from an open MPI file into ctx->hints_in_effect. */
void iob_record_file_info(iob_ctx *c, MPI_File fh);

/* MPI subarray datatypes for a variable: file type (global view) and memory type (strip halo). */
int iob_var_filetype(iob_ctx *c, const iob_var *v, MPI_Datatype *t);
int iob_var_memtype(iob_ctx *c, const iob_var *v, MPI_Datatype *t);

/* Contiguous runs of a variable's block for flat-file backends: calls fn(file_offset, mem_ptr, bytes)
 * for each contiguous run (merging whole rows where the block spans them). Returns first non-zero. */
typedef int (*iob_run_fn)(void *arg, int64_t file_off, void *mem, int64_t bytes);
int iob_var_foreach_run(const iob_var *v, iob_run_fn fn, void *arg);

/* A backend. Every function returns IOB_OK or IOB_FAIL (after iob_fail()). Collective where the
 * library is. `writing` is 1 for the write phase (create/truncate), 0 for read. */
typedef struct {
    const char *name;
    const char *const *modes;          /* NULL-terminated; modes[0] is the default */
    const iob_option *options;         /* its --param keys ({0}-terminated; NULL: none) */
    /* What the option table cannot judge (combinations, rank count), before anything is created;
     * write "what 'value'" into err. May be NULL. */
    int (*check)(const iob_opts *o, int nranks, char *err, size_t errlen);
    /* Data files this backend creates for ctx->path (fpp: per rank). Fills up to max paths. Used for
     * existence checks, cache drop, residency probe and deletion. A directory is walked. */
    int (*files)(const iob_ctx *c, char paths[][4096], int max);
    int (*open)(iob_ctx *c, int writing);
    int (*write)(iob_ctx *c);
    int (*read)(iob_ctx *c);
    int (*sync)(iob_ctx *c);           /* make written data durable (inside the timer) */
    int (*close)(iob_ctx *c);
    void (*versions)(iob_kvlist *out); /* library name -> version string */
    int one_xfer_buffer;               /* honours iob_var.xfer_fill/xfer_read/order (posix, mpiio, hdf5) */
    int direct_read;                   /* honours c->read_direct, for any pattern (posix) */
} iob_backend;

const iob_backend *iob_find_backend(const char *name);
extern const iob_backend *const iob_backends[]; /* NULL-terminated, compiled-in only */

struct iob_json;

/* One phase of a pattern that times itself (iob_pattern.run): reduced over ranks like the driver's. */
typedef struct {
    int done, verified;
    int64_t bytes;                                     /* asked, all ranks together */
    int64_t moved;                                     /* this rank's calls returned (counted) */
    double open_s, access_s, sync_s, close_s, total_s; /* max over ranks; total barrier to barrier */
    double resident;                                   /* read: cache_resident_before_read */
    char cache_defeat[64];                             /* read: how the page cache was defeated */
} iob_run_phase;

/* A workload pattern. */
typedef struct {
    const char *name;
    const char *about;                /* --help: what --size means, what the pattern needs */
    const iob_option *options;        /* its --param keys ({0}-terminated; NULL: none) */
    int (*check)(const iob_opts *o, int nranks, char *err, size_t errlen); /* as iob_backend's */
    /* Allocate and lay out variables for ctx->io_rank (called again when io_rank changes). */
    int (*setup)(iob_ctx *c);
    void (*fill)(iob_ctx *c);                 /* values derived from the global index */
    void (*clear)(iob_ctx *c);                /* poison buffers before a read */
    /* Verify every element read; on mismatch describe the first bad global index in c->errmsg. */
    int (*verify)(iob_ctx *c);
    void (*teardown)(iob_ctx *c);
    /* Extra JSON members describing the layout (dims, global size, ...), appended to the result. */
    void (*describe)(const iob_ctx *c, struct iob_json *j);
    /* Optional, for workloads that are not blocks of variables (metadata stress). When set, the driver
     * calls run() once per repetition on all ranks (c->rep, c->path set) instead of the backend
     * sequence; run() times its own phases barrier to barrier, fills out[0] (write) and out[1] (read),
     * writes extra members of the repetition object into `extra` (rank 0's are used), cleans up its
     * files unless --keep and returns IOB_OK or IOB_FAIL (after iob_fail). */
    int (*run)(iob_ctx *c, struct iob_json *extra, iob_run_phase out[2]);
} iob_pattern;

const iob_pattern *iob_find_pattern(const char *name);
/* End of a pattern's teardown: free its state block and its heap-allocated vars, reset the ctx. */
void iob_pattern_release(iob_ctx *c);
extern const iob_pattern *const iob_patterns[];

/* Minimal streaming JSON writer (json.c). */
typedef struct iob_json { char *buf; size_t len, cap; int need_comma; } iob_json;
void jw_begin_obj(iob_json *j, const char *key);  /* key NULL inside arrays / at top */
void jw_end_obj(iob_json *j);
void jw_begin_arr(iob_json *j, const char *key);
void jw_end_arr(iob_json *j);
void jw_str(iob_json *j, const char *key, const char *val);   /* val NULL -> null */
void jw_int(iob_json *j, const char *key, int64_t val);
void jw_num(iob_json *j, const char *key, double val);
void jw_bool(iob_json *j, const char *key, int val);
void jw_kvlist(iob_json *j, const char *key, const iob_kvlist *l);

#endif
