/*
 * The generator's output depends only on its table and arguments: two runs
 * into different folders must give byte-identical units, registry and docs,
 * and the units must name every variant entry the registry lists.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "check.h"

static int run_gen(const char *gen, const char *archs, const char *groups, const char *dir)
{
    pid_t pid = fork();
    if (pid == 0) {
        execl(gen, gen, "units", "--archs", archs, "--groups", groups, "--outdir", dir, (char *)NULL);
        _exit(127);
    }
    int status = 0;
    waitpid(pid, &status, 0);
    return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

static char *slurp(const char *dir, const char *name, long *size)
{
    char path[4096];
    snprintf(path, sizeof path, "%s/%s", dir, name);
    FILE *f = fopen(path, "rb");
    if (!f)
        return NULL;
    fseek(f, 0, SEEK_END);
    *size = ftell(f);
    fseek(f, 0, SEEK_SET);
    char *buf = malloc((size_t)*size + 1);
    if (fread(buf, 1, (size_t)*size, f) != (size_t)*size) {
        free(buf);
        buf = NULL;
    } else {
        buf[*size] = 0;
    }
    fclose(f);
    return buf;
}

int main(int argc, char **argv)
{
    if (argc != 4) {
        fprintf(stderr, "usage: %s MGPU_GEN ARCHS GROUPS\n", argv[0]);
        return 2;
    }
    char d1[] = "/tmp/mgpu-gen-a-XXXXXX", d2[] = "/tmp/mgpu-gen-b-XXXXXX";
    if (!mkdtemp(d1) || !mkdtemp(d2))
        return 2;
    CHECK(run_gen(argv[1], argv[2], argv[3], d1) == 0, "first generator run failed");
    CHECK(run_gen(argv[1], argv[2], argv[3], d2) == 0, "second generator run failed");

    /* A group list that disagrees with the table must fail the build. */
    char d3[] = "/tmp/mgpu-gen-c-XXXXXX";
    if (!mkdtemp(d3))
        return 2;
    CHECK(run_gen(argv[1], argv[2], "no_such_group", d3) != 0, "generator accepted a wrong group list");

    char names[4096];
    snprintf(names, sizeof names, "%s,registry.c,variants.md,kinds.h", argv[3]);
    long reg_size = 0;
    char *registry = slurp(d1, "registry.c", &reg_size);
    CHECK(registry != NULL, "no registry.c");
    for (char *tok = strtok(names, ","); tok; tok = strtok(NULL, ",")) {
        char file[256];
        snprintf(file, sizeof file, "%s%s", tok, strchr(tok, '.') ? "" : ".cu");
        long s1 = -1, s2 = -2;
        char *a = slurp(d1, file, &s1), *b = slurp(d2, file, &s2);
        CHECK(a && b, "%s missing", file);
        if (a && b)
            CHECK(s1 == s2 && memcmp(a, b, (size_t)s1) == 0, "%s differs between runs", file);
        /* every entry a unit defines is in the registry */
        if (a && strstr(file, ".cu")) {
            for (const char *p = strstr(a, "\nmgpu_"); p; p = strstr(p + 1, "\nmgpu_")) {
                char entry[160];
                if (sscanf(p + 1, "%159[a-z0-9_]", entry) == 1) {
                    char quoted[170];
                    snprintf(quoted, sizeof quoted, "\"%s\"", entry);
                    CHECK(registry && strstr(registry, quoted), "%s defines %s, which the registry lacks", file,
                          entry);
                }
            }
        }
        free(a);
        free(b);
    }
    free(registry);
    char cmd[256];
    snprintf(cmd, sizeof cmd, "rm -rf %s %s %s", d1, d2, d3);
    if (system(cmd) != 0)
        fprintf(stderr, "could not remove the temporary folders\n");
    return check_exit();
}
