/*
 * The rooms of src/ as the include graph shows them, checked on every build:
 *   - no include cycle among the files of src/;
 *   - the runtime room (src/runtime/) includes no operation's header;
 *   - an operation's room includes no other operation's header;
 *   - planning files (*_plan.c, *_plan.h) and the pure runtime files
 *     (dispatch.*, status.c) never reach runtime.h (the driver table), not
 *     even through another header.
 * Usage: test_includes <source root>. Reads the files as text; quoted
 * includes name a file of src/ by its base name (the include path lists
 * the rooms), anything else (<...>, the public header, kernel ABI headers)
 * is outside the graph.
 */
#include <ftw.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"

#define MAX_FILES 256
#define MAX_EDGES 32

struct file {
    char path[512]; /* relative to the source root */
    const char *name, *room;
    int includes[MAX_EDGES];
    int n_includes;
    int state; /* DFS: 0 new, 1 on the stack, 2 done */
};

static struct file files[MAX_FILES];
static int n_files;
static size_t root_len;

static int collect(const char *path, const struct stat *st, int type, struct FTW *ftw)
{
    (void)st;
    (void)ftw;
    const size_t len = strlen(path);
    if (type != FTW_F || len < 3 || (strcmp(path + len - 2, ".c") != 0 && strcmp(path + len - 2, ".h") != 0))
        return 0;
    if (n_files == MAX_FILES)
        return 1;
    struct file *f = &files[n_files++];
    snprintf(f->path, sizeof f->path, "%s", path + root_len + 1);
    f->name = strrchr(f->path, '/') + 1;
    return 0;
}

static int find(const char *name)
{
    for (int i = 0; i < n_files; i++)
        if (strcmp(files[i].name, name) == 0)
            return i;
    return -1;
}

/* "src/gemm/gemm.c" -> "gemm" */
static void room_of(struct file *f, char *buf, size_t size)
{
    const char *start = f->path + strlen("src/");
    const char *slash = strchr(start, '/');
    snprintf(buf, size, "%.*s", slash ? (int)(slash - start) : 0, start);
}

static void read_includes(const char *root, struct file *f)
{
    char full[2048], line[1024];
    if (snprintf(full, sizeof full, "%s/%.1000s", root, f->path) >= (int)sizeof full)
        return;
    FILE *in = fopen(full, "r");
    CHECK(in != NULL, "cannot read %s", full);
    if (!in)
        return;
    while (fgets(line, sizeof line, in)) {
        char name[256];
        if (sscanf(line, " #include \"%255[^\"]\"", name) != 1)
            continue;
        const char *base = strrchr(name, '/') ? strrchr(name, '/') + 1 : name;
        const int to = find(base);
        if (to >= 0 && f->n_includes < MAX_EDGES)
            f->includes[f->n_includes++] = to;
    }
    fclose(in);
}

static int stack[MAX_FILES], depth;

static void visit(int i)
{
    files[i].state = 1;
    stack[depth++] = i;
    for (int e = 0; e < files[i].n_includes; e++) {
        const int to = files[i].includes[e];
        if (files[to].state == 1) {
            fprintf(stderr, "include cycle:");
            for (int s = 0; s < depth; s++)
                fprintf(stderr, " %s ->", files[stack[s]].path);
            fprintf(stderr, " %s\n", files[to].path);
            CHECK(0, "include cycle through %s", files[to].path);
        } else if (files[to].state == 0) {
            visit(to);
        }
    }
    depth--;
    files[i].state = 2;
}

/* 1 when `from` reaches file `target` through includes. */
static int reaches(int from, int target, unsigned char *seen)
{
    if (from == target)
        return 1;
    if (seen[from])
        return 0;
    seen[from] = 1;
    for (int e = 0; e < files[from].n_includes; e++)
        if (reaches(files[from].includes[e], target, seen))
            return 1;
    return 0;
}

static int is_pure(const struct file *f)
{
    return strstr(f->name, "_plan.") != NULL || strncmp(f->name, "dispatch.", 9) == 0 ||
           strcmp(f->name, "status.c") == 0;
}

int main(int argc, char **argv)
{
    if (argc != 2) {
        fprintf(stderr, "usage: %s <source root>\n", argv[0]);
        return 1;
    }
    char src[1024];
    root_len = strlen(argv[1]);
    snprintf(src, sizeof src, "%s/src", argv[1]);
    CHECK(nftw(src, collect, 16, FTW_PHYS) == 0, "cannot walk %s (or more than %d files)", src, MAX_FILES);
    CHECK(n_files > 0, "no files under %s", src);
    for (int i = 0; i < n_files; i++)
        read_includes(argv[1], &files[i]);

    for (int i = 0; i < n_files; i++)
        if (files[i].state == 0)
            visit(i);

    const int runtime_h = find("runtime.h");
    CHECK(runtime_h >= 0, "src/runtime/runtime.h not found");
    for (int i = 0; i < n_files; i++) {
        char room[64];
        room_of(&files[i], room, sizeof room);
        CHECK(room[0] != '\0', "%s is not in a room (src/<room>/)", files[i].path);
        for (int e = 0; e < files[i].n_includes; e++) {
            char to_room[64];
            room_of(&files[files[i].includes[e]], to_room, sizeof to_room);
            CHECK(strcmp(room, to_room) == 0 || strcmp(to_room, "runtime") == 0,
                  "%s (room %s) includes %s of room %s", files[i].path, room, files[files[i].includes[e]].path,
                  to_room);
        }
        if (is_pure(&files[i]) && runtime_h >= 0) {
            unsigned char seen[MAX_FILES] = {0};
            CHECK(!reaches(i, runtime_h, seen), "%s is a planning / pure file but reaches runtime.h",
                  files[i].path);
        }
    }
    printf("%d files of src/ checked\n", n_files);
    return check_exit();
}
