/*
 * selection_core._kernel: the C twin of selection_core/kernel.py's article_counts and marker_windows.
 * The pure-Python path (kernel.py, shingles.py, select.py) is the reference; comments here explain only the C.
 * Hashes only choose where to look: tokens and shingles are compared in full. Runs without the GIL, on PyMem_Raw*.
 */

#define PY_SSIZE_T_CLEAN
#include <Python.h>

#include <stdint.h>
#include <string.h>

#define SHINGLE_SIZE 5 /* config.SHINGLE_SIZE: kernel.check_shingle_size refuses a kernel built otherwise */
#define KEEP (SHINGLE_SIZE - 1) /* tokens before a break that a crossing window can use */
#define MAX_TEXTS 8
#define CODE_POINTS 0x110000
#define FOLD_UNKNOWN UINT32_MAX
#define NO_TOKEN UINT32_MAX
#define MAX_COUNT (UINT32_MAX - 1) /* ids, pool offsets and token lengths fit in uint32 */

/* DECLINED: "not for the kernel" (None). */
enum { OK = 0, NO_MEMORY = -1, DECLINED = -2 };

/* A growable array of `size`-byte items. */
typedef struct {
    void *items;
    size_t length;
    size_t capacity;
} Array;

static int
reserve(Array *a, size_t extra, size_t size)
{
    if (extra <= a->capacity - a->length) {
        return OK;
    }
    size_t cap = a->capacity ? a->capacity : 64;
    while (cap - a->length < extra) {
        if (cap > SIZE_MAX / 2 / size) {
            return NO_MEMORY;
        }
        cap *= 2;
    }
    void *items = PyMem_RawRealloc(a->items, cap * size);
    if (items == NULL) {
        return NO_MEMORY;
    }
    a->items = items;
    a->capacity = cap;
    return OK;
}

#define ITEMS(array, type) ((type *)(array).items)

/* Appends `value` to an Array of `type`, or returns NO_MEMORY. */
#define PUSH(array, type, value)                                              \
    do {                                                                      \
        if ((array).length == (array).capacity &&                             \
            reserve(&(array), 1, sizeof(type)) < 0) {                         \
            return NO_MEMORY;                                                 \
        }                                                                     \
        ITEMS(array, type)[(array).length++] = (value);                       \
    } while (0)

/* Runs BODY(CHAR) with the character type of a str of this kind. */
#define DISPATCH(kind, BODY)                                                  \
    switch (kind) {                                                           \
    case PyUnicode_1BYTE_KIND:                                                \
        BODY(Py_UCS1);                                                        \
        break;                                                                \
    case PyUnicode_2BYTE_KIND:                                                \
        BODY(Py_UCS2);                                                        \
        break;                                                                \
    default:                                                                  \
        BODY(Py_UCS4);                                                        \
        break;                                                                \
    }

/* A distinct token. id == 0 marks a free slot. */
typedef struct {
    uint32_t hash;   /* the high half of its 64-bit hash (the low bits place it) */
    uint32_t id;     /* id + 1 */
    uint32_t offset; /* of its code points in Work.pool */
    uint32_t length;
} TokenSlot;

/* A distinct shingle and the texts it occurs in. mask == 0 marks a free slot. */
typedef struct {
    uint32_t ids[SHINGLE_SIZE];
    uint32_t mask;
} ShingleSlot;

/* A distinct line of the article's texts (no '\n', at least one code point). */
typedef struct {
    const char *data; /* its first byte, in its text */
    size_t bytes;     /* its length in bytes */
    uint64_t hash;
    size_t first_id; /* its token ids: Work.line_ids[first_id : first_id + n_ids] */
    size_t n_ids;
    uint32_t mask; /* the texts it occurs in */
    int kind;
} Line;

typedef struct {
    int kind;
    const void *data;
    Py_ssize_t length;
} TextView;

typedef struct {
    const uint32_t *fold;
    uint64_t seed;
    /* tokens */
    TokenSlot *tokens; /* open addressing, linear probing */
    size_t token_cap;  /* a power of two */
    size_t token_used;
    Array pool;    /* uint32: the code points of every distinct token */
    Array scratch; /* uint32: the code points of the token being read */
    /* lines */
    Array lines;      /* Line */
    size_t *line_slots; /* open addressing: index + 1 into lines, 0 = free */
    size_t line_cap;  /* a power of two */
    Array line_ids;   /* uint32: the token ids of every distinct line */
    Array seq[MAX_TEXTS]; /* size_t: each text's lines that have tokens, in order */
    size_t token_counts[MAX_TEXTS];
    /* shingles */
    ShingleSlot *shingles;
    size_t shingle_cap; /* a power of two */
} Work;

static inline uint64_t
mix64(uint64_t x) /* SplitMix64's finalizer */
{
    x ^= x >> 30;
    x *= 0xbf58476d1ce4e5b9ULL;
    x ^= x >> 27;
    x *= 0x94d049bb133111ebULL;
    x ^= x >> 31;
    return x;
}

static inline uint64_t
token_hash(const uint32_t *cp, size_t length, uint64_t seed)
{
    uint64_t h = seed;
    for (size_t k = 0; k < length; k++) {
        h = (h ^ cp[k]) * 0x100000001b3ULL; /* FNV-1a steps, on code points */
    }
    return mix64(h ^ length);
}

static int
grow_tokens(Work *w)
{
    size_t cap = w->token_cap ? w->token_cap * 2 : 1024;
    if (cap > SIZE_MAX / sizeof(TokenSlot)) {
        return NO_MEMORY;
    }
    TokenSlot *slots = PyMem_RawCalloc(cap, sizeof(TokenSlot));
    if (slots == NULL) {
        return NO_MEMORY;
    }
    /* Slots keep only the high half of the hash: rehash from the code points. */
    for (size_t i = 0; i < w->token_cap; i++) {
        TokenSlot *old = &w->tokens[i];
        if (old->id == 0) {
            continue;
        }
        uint64_t h = token_hash(ITEMS(w->pool, uint32_t) + old->offset, old->length, w->seed);
        size_t j = (size_t)h & (cap - 1);
        while (slots[j].id != 0) {
            j = (j + 1) & (cap - 1);
        }
        slots[j] = *old;
    }
    PyMem_RawFree(w->tokens);
    w->tokens = slots;
    w->token_cap = cap;
    return OK;
}

static inline int
same_code_points(const uint32_t *a, const uint32_t *b, size_t length) /* tokens are short: faster than memcmp */
{
    for (size_t k = 0; k < length; k++) {
        if (a[k] != b[k]) {
            return 0;
        }
    }
    return 1;
}

/* Append to Work.line_ids the id of the token whose code points are in Work.scratch. */
static int
add_token(Work *w)
{
    const uint32_t *cp = ITEMS(w->scratch, uint32_t);
    size_t length = w->scratch.length;
    if (2 * (w->token_used + 1) > w->token_cap && grow_tokens(w) < 0) {
        return NO_MEMORY;
    }
    uint64_t h = token_hash(cp, length, w->seed);
    uint32_t high = (uint32_t)(h >> 32);
    size_t mask = w->token_cap - 1;
    size_t j = (size_t)h & mask;
    uint32_t id;
    for (;;) {
        TokenSlot *s = &w->tokens[j];
        if (s->id == 0) {
            if (w->token_used >= MAX_COUNT || length > MAX_COUNT || w->pool.length > MAX_COUNT - length) {
                return DECLINED;
            }
            if (reserve(&w->pool, length, sizeof(uint32_t)) < 0) {
                return NO_MEMORY;
            }
            s->hash = high;
            s->offset = (uint32_t)w->pool.length;
            s->length = (uint32_t)length;
            s->id = (uint32_t)(++w->token_used);
            memcpy(ITEMS(w->pool, uint32_t) + w->pool.length, cp, length * sizeof(uint32_t));
            w->pool.length += length;
            id = s->id - 1;
            break;
        }
        if (s->hash == high && s->length == length && same_code_points(ITEMS(w->pool, uint32_t) + s->offset, cp, length)) {
            id = s->id - 1;
            break;
        }
        j = (j + 1) & mask;
    }
    PUSH(w->line_ids, uint32_t, id);
    return OK;
}

/* The tokens of s[0:n]: maximal runs of code points with a non-zero entry. */
#define READ_TOKENS(CHAR)                                                     \
    do {                                                                      \
        const CHAR *s = (const CHAR *)data;                                   \
        size_t i = 0;                                                         \
        for (;;) {                                                            \
            uint32_t f = 0;                                                   \
            while (i < n && (f = fold[s[i]]) == 0) {                          \
                i++;                                                          \
            }                                                                 \
            if (i == n) {                                                     \
                break;                                                        \
            }                                                                 \
            w->scratch.length = 0;                                            \
            do {                                                              \
                if (f == FOLD_UNKNOWN) {                                      \
                    return DECLINED;                                          \
                }                                                             \
                PUSH(w->scratch, uint32_t, f);                                \
                i++;                                                          \
            } while (i < n && (f = fold[s[i]]) != 0);                         \
            int rc = add_token(w);                                            \
            if (rc < 0) {                                                     \
                return rc;                                                    \
            }                                                                 \
        }                                                                     \
    } while (0)

/* Append the token ids of the n code points at `data` to Work.line_ids. */
static int
read_tokens(Work *w, int kind, const void *data, size_t n)
{
    const uint32_t *fold = w->fold;
    DISPATCH(kind, READ_TOKENS)
    return OK;
}

static uint64_t
bytes_hash(const char *p, size_t n, uint64_t seed)
{
    uint64_t h = seed ^ (n * 0x9e3779b97f4a7c15ULL);
    while (n >= 8) {
        uint64_t v;
        memcpy(&v, p, 8);
        h = (h ^ v) * 0xff51afd7ed558ccdULL;
        h ^= h >> 32;
        p += 8;
        n -= 8;
    }
    if (n > 0) {
        uint64_t v = 0;
        memcpy(&v, p, n);
        h = (h ^ v) * 0xc4ceb9fe1a85ec53ULL;
    }
    return mix64(h);
}

static int
grow_lines(Work *w)
{
    size_t cap = w->line_cap ? w->line_cap * 2 : 256;
    if (cap > SIZE_MAX / sizeof(size_t)) {
        return NO_MEMORY;
    }
    size_t *slots = PyMem_RawCalloc(cap, sizeof(size_t));
    if (slots == NULL) {
        return NO_MEMORY;
    }
    const Line *lines = ITEMS(w->lines, Line);
    for (size_t i = 0; i < w->lines.length; i++) {
        size_t j = (size_t)lines[i].hash & (cap - 1);
        while (slots[j] != 0) {
            j = (j + 1) & (cap - 1);
        }
        slots[j] = i + 1;
    }
    PyMem_RawFree(w->line_slots);
    w->line_slots = slots;
    w->line_cap = cap;
    return OK;
}

/* Text `text` holds the line of n code points at `data`: find it or read it. */
static int
add_line(Work *w, int text, int kind, const void *data, size_t n)
{
    size_t bytes = n * (size_t)kind;
    uint64_t h = bytes_hash(data, bytes, w->seed);
    if (2 * (w->lines.length + 1) > w->line_cap && grow_lines(w) < 0) {
        return NO_MEMORY;
    }
    size_t mask = w->line_cap - 1;
    size_t j = (size_t)h & mask;
    size_t index;
    for (;;) {
        size_t slot = w->line_slots[j];
        if (slot == 0) {
            if (reserve(&w->lines, 1, sizeof(Line)) < 0) {
                return NO_MEMORY;
            }
            size_t first_id = w->line_ids.length;
            int rc = read_tokens(w, kind, data, n);
            if (rc < 0) {
                return rc;
            }
            index = w->lines.length++;
            Line *line = &ITEMS(w->lines, Line)[index];
            line->data = data;
            line->bytes = bytes;
            line->hash = h;
            line->first_id = first_id;
            line->n_ids = w->line_ids.length - first_id;
            line->mask = 0;
            line->kind = kind;
            w->line_slots[j] = index + 1;
            break;
        }
        const Line *line = &ITEMS(w->lines, Line)[slot - 1];
        if (line->hash == h && line->kind == kind && line->bytes == bytes && memcmp(line->data, data, bytes) == 0) {
            index = slot - 1;
            break;
        }
        j = (j + 1) & mask;
    }
    Line *line = &ITEMS(w->lines, Line)[index];
    line->mask |= 1u << text;
    if (line->n_ids > 0) {
        PUSH(w->seq[text], size_t, index);
        w->token_counts[text] += line->n_ids;
    }
    return OK;
}

#define READ_LINES(CHAR)                                                      \
    do {                                                                      \
        const CHAR *s = (const CHAR *)t->data;                                \
        size_t n = (size_t)t->length, start = 0;                              \
        while (start < n) {                                                   \
            size_t end = start;                                               \
            while (end < n && s[end] != '\n') {                               \
                end++;                                                        \
            }                                                                 \
            if (end > start) {                                                \
                int rc = add_line(w, text, t->kind, s + start, end - start);  \
                if (rc < 0) {                                                 \
                    return rc;                                                \
                }                                                             \
            }                                                                 \
            start = end + 1;                                                  \
        }                                                                     \
    } while (0)

static int
read_lines(Work *w, int text, const TextView *t)
{
    DISPATCH(t->kind, READ_LINES)
    return OK;
}

/* Odd constants for the shingle hash (digits of pi and e, forced odd). */
static const uint64_t K[SHINGLE_SIZE] = {
    0x243f6a8885a308d3ULL, 0x13198a2e03707345ULL, 0xa4093822299f31d1ULL,
    0x082efa98ec4e6c89ULL, 0xb7e151628aed2a6bULL,
};

static inline size_t
shingle_slot(const uint32_t *ids, uint64_t seed, int shift)
{
    uint64_t h = seed + ids[0] * K[0] + ids[1] * K[1] + ids[2] * K[2] + ids[3] * K[3] + ids[4] * K[4];
    h ^= h >> 29;
    return (size_t)((h * 0x9e3779b97f4a7c15ULL) >> shift); /* the high bits */
}

static inline int
same_ids(const uint32_t *a, const uint32_t *b)
{
    return a[0] == b[0] && a[1] == b[1] && a[2] == b[2] && a[3] == b[3] && a[4] == b[4];
}

/* Record that the texts of `bits` have the shingle `ids`; `regions` counts the
 * distinct shingles by the set of texts they occur in. */
static inline void
add_shingle(Work *w, const uint32_t *ids, uint32_t bits, int shift, size_t *regions)
{
    size_t mask = w->shingle_cap - 1;
    size_t j = shingle_slot(ids, w->seed, shift);
    for (;;) {
        ShingleSlot *s = &w->shingles[j];
        if (s->mask == 0) {
            memcpy(s->ids, ids, sizeof(s->ids));
            s->mask = bits;
            regions[bits]++;
            return;
        }
        if (same_ids(s->ids, ids)) {
            uint32_t both = s->mask | bits;
            if (both != s->mask) {
                regions[s->mask]--;
                regions[both]++;
                s->mask = both;
            }
            return;
        }
        j = (j + 1) & mask;
    }
}

/* Every shingle of `text`, except the windows inside one line (recorded per line):
 * the windows across its line breaks, or the one shingle of a text of 1 to 4 tokens. */
static void
add_text_shingles(Work *w, int text, int shift, size_t *regions)
{
    const Line *lines = ITEMS(w->lines, Line);
    const uint32_t *line_ids = ITEMS(w->line_ids, uint32_t);
    const size_t *seq = ITEMS(w->seq[text], size_t);
    uint32_t buf[2 * KEEP]; /* the last tokens before a break, then the first after it */
    size_t tail = 0;        /* how many of the first are there */
    for (size_t k = 0; k < w->seq[text].length; k++) {
        const Line *line = &lines[seq[k]];
        const uint32_t *ids = line_ids + line->first_id;
        size_t n = line->n_ids;
        size_t head = n < KEEP ? n : KEEP;
        memcpy(buf + tail, ids, head * sizeof(uint32_t));
        for (size_t start = 0; start + SHINGLE_SIZE <= tail + head; start++) {
            add_shingle(w, buf + start, 1u << text, shift, regions); /* starts before the break */
        }
        /* The new tail: the last KEEP tokens so far. */
        if (n >= KEEP) {
            memcpy(buf, ids + n - KEEP, KEEP * sizeof(uint32_t));
            tail = KEEP;
        } else {
            size_t total = tail + n, drop = total > KEEP ? total - KEEP : 0;
            memmove(buf, buf + drop, (total - drop) * sizeof(uint32_t));
            tail = total - drop;
        }
    }
    size_t total = w->token_counts[text];
    if (total > 0 && total < SHINGLE_SIZE) { /* then tail holds every token */
        uint32_t key[SHINGLE_SIZE];
        for (size_t i = 0; i < SHINGLE_SIZE; i++) {
            key[i] = i < total ? buf[i] : NO_TOKEN;
        }
        add_shingle(w, key, 1u << text, shift, regions);
    }
}

static int
same_text(const TextView *a, const TextView *b)
{
    return a->length == b->length && a->kind == b->kind &&
           memcmp(a->data, b->data, (size_t)a->length * (size_t)a->kind) == 0;
}

/* Token counts and regions of the present texts; `first[i]` is the first text
 * equal to text i (i itself if none), -1 for a missing text. */
static int
count(Work *w, const TextView *views, const int *first, int n_texts, size_t *token_counts, size_t *regions)
{
    for (int i = 0; i < n_texts; i++) {
        if (first[i] == i) {
            int rc = read_lines(w, i, &views[i]);
            if (rc < 0) {
                return rc;
            }
        }
    }
    /* At most this many distinct shingles: one table, sized once, at most half full. */
    size_t bound = 0;
    const Line *lines = ITEMS(w->lines, Line);
    for (size_t k = 0; k < w->lines.length; k++) {
        bound += lines[k].n_ids >= SHINGLE_SIZE ? lines[k].n_ids - KEEP : 0;
    }
    for (int i = 0; i < n_texts; i++) {
        bound += KEEP * w->seq[i].length + 1;
    }
    size_t cap = 1024;
    int bits = 10;
    while (cap / 2 < bound) {
        if (cap > SIZE_MAX / 2 / sizeof(ShingleSlot)) {
            return NO_MEMORY;
        }
        cap *= 2;
        bits++;
    }
    w->shingles = PyMem_RawCalloc(cap, sizeof(ShingleSlot));
    if (w->shingles == NULL) {
        return NO_MEMORY;
    }
    w->shingle_cap = cap;
    size_t base[1 << MAX_TEXTS] = {0};
    const uint32_t *line_ids = ITEMS(w->line_ids, uint32_t);
    for (size_t k = 0; k < w->lines.length; k++) {
        const Line *line = &lines[k];
        for (size_t start = 0; start + SHINGLE_SIZE <= line->n_ids; start++) {
            add_shingle(w, line_ids + line->first_id + start, line->mask, 64 - bits, base);
        }
    }
    for (int i = 0; i < n_texts; i++) {
        if (first[i] == i) {
            add_text_shingles(w, i, 64 - bits, base);
        }
    }
    /* A text equal to an earlier one has exactly that one's shingles. */
    for (uint32_t m = 1; m < (1u << n_texts); m++) {
        uint32_t full = m;
        for (int i = 0; i < n_texts; i++) {
            if (first[i] >= 0 && first[i] != i && (m >> first[i]) & 1) {
                full |= 1u << i;
            }
        }
        regions[full] += base[m];
    }
    for (int i = 0; i < n_texts; i++) {
        token_counts[i] = first[i] >= 0 ? w->token_counts[first[i]] : 0;
    }
    return OK;
}

static void
free_work(Work *w)
{
    PyMem_RawFree(w->tokens);
    PyMem_RawFree(w->pool.items);
    PyMem_RawFree(w->scratch.items);
    PyMem_RawFree(w->lines.items);
    PyMem_RawFree(w->line_slots);
    PyMem_RawFree(w->line_ids.items);
    for (int i = 0; i < MAX_TEXTS; i++) {
        PyMem_RawFree(w->seq[i].items);
    }
    PyMem_RawFree(w->shingles);
    memset(w, 0, sizeof(*w));
}

static PyObject *
sizes_to_tuple(const size_t *values, Py_ssize_t n)
{
    PyObject *t = PyTuple_New(n);
    if (t == NULL) {
        return NULL;
    }
    for (Py_ssize_t i = 0; i < n; i++) {
        PyObject *v = PyLong_FromSize_t(values[i]);
        if (v == NULL) {
            Py_DECREF(t);
            return NULL;
        }
        PyTuple_SET_ITEM(t, i, v);
    }
    return t;
}

static PyObject *
article_counts(PyObject *Py_UNUSED(module), PyObject *args)
{
    PyObject *texts;
    Py_buffer table = {0};
    unsigned long long seed;
    if (!PyArg_ParseTuple(args, "O!y*K:article_counts", &PyTuple_Type, &texts, &table, &seed)) {
        return NULL;
    }
    PyObject *result = NULL;
    Py_ssize_t n_texts = PyTuple_GET_SIZE(texts);
    TextView views[MAX_TEXTS];
    int first[MAX_TEXTS];
    size_t token_counts[MAX_TEXTS] = {0};
    size_t regions[1 << MAX_TEXTS] = {0};
    Work w;
    memset(&w, 0, sizeof(w));
    int rc;

    if (table.len != (Py_ssize_t)(CODE_POINTS * sizeof(uint32_t))) {
        PyErr_Format(PyExc_ValueError, "fold_table must have %zu bytes, not %zd",
                     (size_t)CODE_POINTS * sizeof(uint32_t), table.len);
        goto done;
    }
    if (((const uint32_t *)table.buf)['\n'] != 0) {
        PyErr_SetString(PyExc_ValueError, "fold_table must make '\\n' a separator");
        goto done;
    }
    if (n_texts < 1 || n_texts > MAX_TEXTS) {
        PyErr_Format(PyExc_ValueError, "texts must hold 1 to %d items, not %zd", MAX_TEXTS, n_texts);
        goto done;
    }
    for (int i = 0; i < (int)n_texts; i++) {
        PyObject *item = PyTuple_GET_ITEM(texts, i);
        first[i] = -1;
        if (item == Py_None) {
            continue;
        }
        if (!PyUnicode_Check(item)) {
            PyErr_Format(PyExc_TypeError, "texts[%d] must be str or None, not %.100s", i, Py_TYPE(item)->tp_name);
            goto done;
        }
        if (PyUnicode_READY(item) < 0) {
            goto done;
        }
        views[i].kind = PyUnicode_KIND(item);
        views[i].data = PyUnicode_DATA(item);
        views[i].length = PyUnicode_GET_LENGTH(item);
        first[i] = i;
        for (int j = 0; j < i; j++) {
            if (first[j] == j && same_text(&views[i], &views[j])) {
                first[i] = j;
                break;
            }
        }
    }

    w.fold = (const uint32_t *)table.buf;
    w.seed = (uint64_t)seed;
    Py_BEGIN_ALLOW_THREADS
    rc = count(&w, views, first, (int)n_texts, token_counts, regions);
    free_work(&w);
    Py_END_ALLOW_THREADS

    if (rc == NO_MEMORY) {
        PyErr_NoMemory();
        goto done;
    }
    if (rc == DECLINED) {
        result = Py_NewRef(Py_None);
        goto done;
    }
    PyObject *counts = sizes_to_tuple(token_counts, n_texts);
    PyObject *regs = counts == NULL ? NULL : sizes_to_tuple(regions, (Py_ssize_t)1 << n_texts);
    if (regs != NULL) {
        result = PyTuple_Pack(2, counts, regs);
    }
    Py_XDECREF(counts);
    Py_XDECREF(regs);

done:
    PyBuffer_Release(&table);
    return result;
}

/* The windows of normalize._maybe_mojibake; `goto error` on a Python error. */
#define MARKER_WINDOWS(CHAR)                                                  \
    do {                                                                      \
        const CHAR *s = (const CHAR *)data;                                   \
        for (Py_ssize_t p = 0; p < n; p++) {                                  \
            if (!marked[s[p]]) {                                              \
                continue;                                                     \
            }                                                                 \
            if (p - width + 1 <= hi) {                                        \
                hi = p + width;                                               \
                continue;                                                     \
            }                                                                 \
            if (hi > 0 && append_window(out, lo, hi) < 0) {                   \
                goto error;                                                   \
            }                                                                 \
            lo = p - width + 1 > 0 ? p - width + 1 : 0;                       \
            hi = p + width;                                                   \
        }                                                                     \
    } while (0)

static int
append_window(PyObject *list, Py_ssize_t lo, Py_ssize_t hi)
{
    PyObject *window = Py_BuildValue("(nn)", lo > 0 ? lo : 0, hi);
    if (window == NULL) {
        return -1;
    }
    int rc = PyList_Append(list, window);
    Py_DECREF(window);
    return rc;
}

static PyObject *
marker_windows(PyObject *Py_UNUSED(module), PyObject *args)
{
    PyObject *text;
    Py_buffer table = {0};
    Py_ssize_t width;
    if (!PyArg_ParseTuple(args, "Uy*n:marker_windows", &text, &table, &width)) {
        return NULL;
    }
    PyObject *out = NULL;
    if (table.len != CODE_POINTS) {
        PyErr_Format(PyExc_ValueError, "marker_table must have %d bytes, not %zd", CODE_POINTS, table.len);
        goto done;
    }
    if (width < 1 || width > 1 << 20) {
        PyErr_Format(PyExc_ValueError, "width must be 1 to %d, not %zd", 1 << 20, width);
        goto done;
    }
    out = PyList_New(0);
    if (out == NULL || PyUnicode_READY(text) < 0) {
        goto error;
    }
    const unsigned char *marked = table.buf;
    const void *data = PyUnicode_DATA(text);
    Py_ssize_t n = PyUnicode_GET_LENGTH(text), lo = -1, hi = -1;
    DISPATCH(PyUnicode_KIND(text), MARKER_WINDOWS)
    if (hi > 0 && append_window(out, lo, hi) < 0) {
        goto error;
    }
    goto done;
error:
    Py_CLEAR(out);
done:
    PyBuffer_Release(&table);
    return out;
}

static PyMethodDef kernel_methods[] = {
    {"article_counts", article_counts, METH_VARARGS, "article_counts(texts, fold_table, seed, /): see kernel.py"},
    {"marker_windows", marker_windows, METH_VARARGS, "marker_windows(text, marker_table, width, /): see kernel.py"},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef kernel_module = {
    PyModuleDef_HEAD_INIT,
    .m_name = "selection_core._kernel",
    .m_doc = "The C twin of selection_core.kernel (tokens, shingles, set sizes).",
    .m_size = 0,
    .m_methods = kernel_methods,
};

PyMODINIT_FUNC
PyInit__kernel(void)
{
    return PyModuleDef_Init(&kernel_module);
}
