/* Command line (docs/CONTRACT.md §1): parse and validate everything before any file is created. */
#include <errno.h>
#include <getopt.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include "driver.h"

static const char usage[] =
    "usage: mpirun -np P iobench --backend B [--mode M] [--pattern benchio] [--size N|N1,N2,N3]\n"
    "         [--dir DIR] [--name BASE] [--phase write|read|both] [--repeat R]\n"
    "         [--verify|--no-verify] [--keep] [--hint KEY=VALUE]... [--param KEY=VALUE]...\n"
    "         [--json FILE] [--quiet] [--help] [--version] [--list]\n"
    "Times each rank's open->access->sync->close after a barrier, the longest rank's span\n"
    "(IOR's timing); result JSON on stdout\n"
    "(schema " IOB_SCHEMA "; --quiet: only to --json FILE). Bandwidth in MiB/s (2^20 bytes).\n"
    "Exit: 0 ok, 1 library error or verification mismatch, 2 bad input.\n";

/* --param keys of the driver itself (docs/CONTRACT.md §1). */
const iob_option iob_driver_options[] = {
    {"barriers", IOB_OPT_BOOL, "0", .help = "1: IOR -g, agree between open, access and close inside the timed span"},
    {"pagepool", IOB_OPT_BOOL, "0", .help = "1: the file system caches outside Linux's page cache (GPFS pagepool): "
                                    "own-node reads reported as cache not defeated"},
    {0}};

#define BAD(what, val) (snprintf(err, errlen, "%s '%s'", (what), (val)), IOB_BADINPUT)

/* Strict positive integer: digits only, 1..max. */
static int parse_pos(const char *s, int64_t max, int64_t *out)
{
    if (!*s)
        return -1;
    for (const char *p = s; *p; p++)
        if (*p < '0' || *p > '9')
            return -1;
    errno = 0;
    long long v = strtoll(s, NULL, 10);
    if (errno == ERANGE || v < 1 || v > max)
        return -1;
    *out = v;
    return 0;
}

static int add_kv(iob_kvlist *l, const char *arg)
{
    const char *eq = strchr(arg, '=');
    if (!eq || eq == arg || l->n >= IOB_MAXKV)
        return -1;
    char key[256];
    size_t kl = (size_t)(eq - arg);
    if (kl >= sizeof key)
        return -1;
    memcpy(key, arg, kl);
    key[kl] = '\0';
    iob_kv_put(l, key, eq + 1);
    return 0;
}

static int in_list(const char *const *list, const char *s)
{
    for (int i = 0; list && list[i]; i++)
        if (strcmp(list[i], s) == 0)
            return 1;
    return 0;
}

static int writable_dir(const char *d)
{
    struct stat st;
    return stat(d, &st) == 0 && S_ISDIR(st.st_mode) && access(d, W_OK | X_OK) == 0;
}

static void quote_arg(char *dst, size_t cap, const char *a)
{
    size_t len = strlen(dst);
    int safe = *a != '\0';
    for (const char *p = a; *p; p++)
        if (!strchr("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_@%+=:,./-", *p))
            safe = 0;
    if (len && len + 1 < cap)
        dst[len++] = ' ';
    if (!safe && len + 1 < cap)
        dst[len++] = '\'';
    for (const char *p = a; *p && len + 5 < cap; p++) {
        if (*p == '\'') {
            memcpy(dst + len, "'\\''", 4);
            len += 4;
        } else {
            dst[len++] = *p;
        }
    }
    if (!safe && len + 1 < cap)
        dst[len++] = '\'';
    dst[len] = '\0';
}

/* --list: one line per compiled-in backend, "name mode mode ..." (scripts read these lines up to the
 * first empty one), then every owner's --param table (KEY=DEFAULT, what it accepts, [modes] what it
 * does): the driver's, the backends', the patterns' (with what --size means). --help: the usage, then
 * the same. */
static void list_backends(FILE *out)
{
    for (int i = 0; iob_backends[i]; i++) {
        fputs(iob_backends[i]->name, out);
        for (int m = 0; iob_backends[i]->modes[m]; m++)
            fprintf(out, " %s", iob_backends[i]->modes[m]);
        fputc('\n', out);
    }
    fputs("\n--param KEY=VALUE, by owner (KEY=DEFAULT, what it accepts, [modes using it] what it does):\n"
          "  driver\n", out);
    iob_options_help(out, iob_driver_options);
    for (int i = 0; iob_backends[i]; i++) {
        fprintf(out, "  %s\n", iob_backends[i]->name);
        iob_options_help(out, iob_backends[i]->options);
    }
    fputs("patterns (--pattern NAME): what --size means, then its --param keys:\n", out);
    for (int i = 0; iob_patterns[i]; i++) {
        fprintf(out, "  %-10s %s\n", iob_patterns[i]->name, iob_patterns[i]->about);
        iob_options_help(out, iob_patterns[i]->options);
    }
}

int iob_parse_options(int argc, char **argv, iob_opts *o, int nranks, FILE *out, char *err, size_t errlen)
{
    static const struct option longopts[] = {
        {"backend", required_argument, 0, 'b'}, {"mode", required_argument, 0, 'm'},
        {"pattern", required_argument, 0, 'p'}, {"size", required_argument, 0, 's'},
        {"dir", required_argument, 0, 'd'},     {"name", required_argument, 0, 'n'},
        {"phase", required_argument, 0, 'P'},   {"repeat", required_argument, 0, 'r'},
        {"verify", no_argument, 0, 'V'},        {"no-verify", no_argument, 0, 'N'},
        {"keep", no_argument, 0, 'k'},          {"hint", required_argument, 0, 'H'},
        {"param", required_argument, 0, 'A'},   {"json", required_argument, 0, 'j'},
        {"quiet", no_argument, 0, 'q'},         {"help", no_argument, 0, 'h'},
        {"version", no_argument, 0, 'v'},       {"list", no_argument, 0, 'l'},
        {0, 0, 0, 0}};
    static char default_name[256];
    memset(o, 0, sizeof *o);
    o->pattern = "benchio";
    o->dir = ".";
    o->do_write = o->do_read = 1;
    o->repeat = o->verify = 1;
    o->size[0] = o->size[1] = o->size[2] = 32;
    o->nsize = 1;
    for (int i = 0; i < argc; i++)
        quote_arg(o->command, sizeof o->command, argv[i]);

    opterr = 0;
    optind = 1;
    int ch;
    int64_t v;
    while ((ch = getopt_long(argc, argv, "+:", longopts, NULL)) != -1) {
        switch (ch) {
        case 'b': o->backend = optarg; break;
        case 'm': o->mode = optarg; break;
        case 'p': o->pattern = optarg; break;
        case 'd': o->dir = optarg; break;
        case 'n': o->name = optarg; break;
        case 'j': o->json_path = optarg; break;
        case 'V': o->verify = 1; break;
        case 'N': o->verify = 0; break;
        case 'k': o->keep = 1; break;
        case 'q': o->quiet = 1; break;
        case 's': {
            char buf[256], *save = NULL;
            int n = 0;
            if (strlen(optarg) >= sizeof buf)
                return BAD("bad --size", optarg);
            strcpy(buf, optarg);
            for (char *tok = strtok_r(buf, ",", &save); tok; tok = strtok_r(NULL, ",", &save)) {
                if (n >= IOB_MAXDIMS || parse_pos(tok, INT_MAX, &v))
                    return BAD("bad --size (1..2147483647 per number)", optarg);
                o->size[n++] = v;
            }
            if (n != 1 && n != 3)
                return BAD("bad --size (N or N1,N2,N3)", optarg);
            if (n == 1)
                o->size[1] = o->size[2] = o->size[0];
            o->nsize = n;
            /* element count given must fit: product * 8 bytes <= 2^62 */
            long double prod = 8.0L;
            for (int d = 0; d < n; d++)
                prod *= (long double)o->size[d];
            if (prod > 4611686018427387904.0L)
                return BAD("--size too large (product * 8 bytes > 2^62)", optarg);
            break;
        }
        case 'P':
            if (strcmp(optarg, "write") == 0)
                o->do_read = 0, o->do_write = 1;
            else if (strcmp(optarg, "read") == 0)
                o->do_read = 1, o->do_write = 0;
            else if (strcmp(optarg, "both") == 0)
                o->do_read = o->do_write = 1;
            else
                return BAD("unknown --phase", optarg);
            break;
        case 'r':
            if (parse_pos(optarg, 100000, &v))
                return BAD("bad --repeat (1..100000)", optarg);
            o->repeat = (int)v;
            break;
        case 'H':
            if (add_kv(&o->hints, optarg))
                return BAD("bad --hint (KEY=VALUE)", optarg);
            break;
        case 'A':
            if (add_kv(&o->params, optarg))
                return BAD("bad --param (KEY=VALUE)", optarg);
            break;
        case 'h':
            if (out) {
                fputs(usage, out);
                fputs("backends (--backend NAME [--mode MODE], first mode the default):\n", out);
                list_backends(out);
            }
            return IOB_INFO_EXIT;
        case 'v':
            if (out)
                fprintf(out, "iobench %s\n", IOB_VERSION);
            return IOB_INFO_EXIT;
        case 'l':
            if (out)
                list_backends(out);
            return IOB_INFO_EXIT;
        case ':':
            return BAD("missing value for option", argv[optind - 1]);
        default:
            return BAD("unknown option", argv[optind - 1]);
        }
    }
    if (optind < argc)
        return BAD("unexpected argument", argv[optind]);

    if (!o->backend)
        return BAD("missing required option", "--backend");
    const iob_backend *be = iob_find_backend(o->backend);
    if (!be)
        return BAD("unknown backend (see --list)", o->backend);
    if (!o->mode)
        o->mode = be->modes[0];
    else if (!in_list(be->modes, o->mode)) {
        snprintf(err, errlen, "unknown mode for backend %s '%s'", be->name, o->mode);
        return IOB_BADINPUT;
    }
    const iob_pattern *pat = iob_find_pattern(o->pattern);
    if (!pat)
        return BAD("unknown pattern", o->pattern);
    if (iob_params_check(o, err, errlen))
        return IOB_BADINPUT;
    if (!writable_dir(o->dir))
        return BAD("--dir is not an existing writable directory", o->dir);
    if (o->name) {
        if (!*o->name || strchr(o->name, '/'))
            return BAD("bad --name (no '/', not empty)", o->name);
    } else {
        snprintf(default_name, sizeof default_name, "iobench_%s_%s_%s", be->name, o->mode, pat->name);
        o->name = default_name;
    }
    if (o->json_path) {
        char d[4096];
        snprintf(d, sizeof d, "%s", o->json_path);
        char *slash = strrchr(d, '/');
        const char *parent = slash ? (slash == d ? "/" : (*slash = '\0', d)) : ".";
        struct stat st;
        if (!*o->json_path || !writable_dir(parent) || (stat(o->json_path, &st) == 0 && S_ISDIR(st.st_mode)))
            return BAD("--json FILE cannot be written", o->json_path);
    }
    if (pat->check && pat->check(o, nranks, err, errlen))
        return IOB_BADINPUT;
    if (be->check && be->check(o, nranks, err, errlen))
        return IOB_BADINPUT;
    return IOB_OK;
}
