/* rundir.c - the run directory's files and its retention protocol. */
#include "rundir.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <time.h>
#include <unistd.h>

#include "ckpt.h"
#include "util.h"

/* Largest elo.csv read for its newest version (as the evaluator's). */
#define PB__ELO_CSV_MAX (64u << 20)

int pb_rundir_path(const char *run_dir, const char *name, char *buf,
                   size_t n) {
  int w = snprintf(buf, n, "%s/%s", run_dir, name);
  return w >= 0 && (size_t)w < n ? 0 : PB_ERANGE;
}

void pb_rundir_ckpt_path(const char *run_dir, uint64_t version, char *buf,
                         size_t n) {
  snprintf(buf, n, "%s/" PB_RUNDIR_CHECKPOINTS "/ckpt-%06llu.pbck", run_dir,
           (unsigned long long)version);
}

int pb_rundir_versions(const char *run_dir, uint64_t **versions, size_t *n,
                       pb_err_t *err) {
  if (run_dir == NULL || versions == NULL || n == NULL)
    return pb_err_set(err, PB_EINVAL, "pb_rundir_versions: NULL argument");
  *versions = NULL;
  *n = 0;
  char path[PB_RUNDIR_PATH_MAX];
  if (pb_rundir_path(run_dir, PB_RUNDIR_CHECKPOINTS, path, sizeof path) != 0)
    return pb_err_set(err, PB_EINVAL, "%.200s: run directory path too long",
                      run_dir);
  int rc = pb_ckpt_numbers(path, "ckpt", versions, n, err);
  return rc == PB_ENOTFOUND ? 0 : rc; /* no checkpoints/ yet: none */
}

static void note_info(void *ctx, const char *msg) {
  pb_log_info(ctx, "%s", msg);
}

int pb_rundir_prune(const pb_config_t *cfg, uint64_t newest, pb_log_t *log,
                    pb_err_t *err) {
  if (cfg == NULL)
    return pb_err_set(err, PB_EINVAL, "pb_rundir_prune: NULL config");
  if (cfg->run.keep_last <= 0) return 0; /* keep everything */
  pb_ckpt_keep_t keep = {(uint64_t)cfg->run.keep_last,
                         (uint64_t)(cfg->run.keep_every > 0
                                        ? cfg->run.keep_every
                                        : 0),
                         UINT64_MAX};
  pb_err_t e;
  pb_err_clear(&e);
  if (pb_rundir_protect_from(cfg->run.dir, &keep.protect_from, &e) != 0)
    pb_log_warn(log,
                "checkpoint retention: %s; deleting no checkpoint this "
                "time, as the evaluator may still need it",
                e.msg);
  char dir[PB_CONFIG_PATH_MAX + 16];
  snprintf(dir, sizeof dir, "%s/" PB_RUNDIR_CHECKPOINTS, cfg->run.dir);
  return pb_ckpt_prune(dir, "ckpt", newest, &keep, note_info, log, err);
}

/* The version column of the last row of the elo.csv at path: 0 and *any
 * set when there is one; *any 0 when the file is missing or has no row. */
static int newest_rated(const char *path, int *any, uint64_t *version,
                        pb_err_t *err) {
  *any = 0;
  char *text = NULL;
  size_t len = 0;
  struct stat st;
  if (stat(path, &st) != 0 && errno == ENOENT) return 0;
  int rc = pb_read_file(path, PB__ELO_CSV_MAX, &text, &len, err);
  if (rc != 0) return rc;
  static const char head[] = "iteration,version,";
  if (strncmp(text, head, sizeof head - 1) != 0) {
    free(text);
    return pb_err_set(err, PB_ECORRUPT, "%s: not an elo.csv (header)", path);
  }
  while (len > 0 && (text[len - 1] == '\n' || text[len - 1] == '\r'))
    text[--len] = '\0';
  char *line = strrchr(text, '\n');
  if (line == NULL) { /* the header alone */
    free(text);
    return 0;
  }
  line++;
  const char *comma = strchr(line, ',');
  char *end = NULL;
  errno = 0;
  unsigned long long v =
      comma != NULL ? strtoull(comma + 1, &end, 10) : 0;
  if (comma == NULL || end == comma + 1 || *end != ',' || errno != 0) {
    rc = pb_err_set(err, PB_ECORRUPT, "%s: last row has no version: %.80s",
                    path, line);
  } else {
    *any = 1;
    *version = (uint64_t)v;
  }
  free(text);
  return rc;
}

int pb_rundir_protect_from(const char *run_dir, uint64_t *from,
                           pb_err_t *err) {
  if (run_dir == NULL || from == NULL)
    return pb_err_set(err, PB_EINVAL, "pb_rundir_protect_from: NULL argument");
  *from = 0;
  if (strlen(run_dir) >= PB_RUNDIR_DIR_MAX)
    return pb_err_set(err, PB_EINVAL, "%.200s: run directory path too long",
                      run_dir);
  char path[PB_RUNDIR_PATH_MAX];
  pb_rundir_path(run_dir, PB_RUNDIR_EVALUATOR_LOCK, path, sizeof path);
  int fd = open(path, O_RDONLY | O_CLOEXEC);
  if (fd < 0) {
    if (errno == ENOENT) {
      *from = UINT64_MAX; /* no evaluator ever ran here */
      return 0;
    }
    return pb_err_set(err, PB_EIO, "%s: cannot open: %s", path,
                      strerror(errno));
  }
  int held = 0;
  if (flock(fd, LOCK_SH | LOCK_NB) == 0)
    flock(fd, LOCK_UN);
  else if (errno == EWOULDBLOCK)
    held = 1;
  else {
    int e = errno;
    close(fd);
    return pb_err_set(err, PB_EIO, "%s: cannot probe the lock: %s", path,
                      strerror(e));
  }
  close(fd);
  if (!held) {
    *from = UINT64_MAX;
    return 0;
  }
  pb_rundir_path(run_dir, PB_RUNDIR_ELO_CSV, path, sizeof path);
  int any = 0;
  uint64_t v = 0;
  int rc = newest_rated(path, &any, &v, err);
  if (rc != 0) return rc;
  *from = any && v < UINT64_MAX ? v + 1 : 0;
  return 0;
}

int pb_rundir_lock_evaluator(const char *run_dir, pb_log_t *log) {
  char path[PB_RUNDIR_PATH_MAX];
  pb_err_t e;
  pb_err_clear(&e);
  if (pb_rundir_path(run_dir, PB_RUNDIR_EVALUATOR_LOCK, path, sizeof path) !=
      0) {
    pb_log_warn(log, "%.200s: run directory path too long for its lock",
                run_dir);
    return -1;
  }
  for (int i = 0; i < 25; i++) {
    pb_err_clear(&e);
    int fd = pb_lock_file(path, &e);
    if (fd >= 0) return fd;
    if (e.code != PB_EAGAIN) break;
    struct timespec ts = {0, 20 * 1000 * 1000};
    nanosleep(&ts, NULL);
  }
  pb_log_warn(log,
              "%s; going on without it: the learner may prune a checkpoint "
              "before this evaluator rates it (it is then skipped)",
              e.msg);
  return -1;
}

int pb_rundir_lock_learner(const char *run_dir, pb_err_t *err) {
  char path[PB_RUNDIR_PATH_MAX];
  if (pb_rundir_path(run_dir, PB_RUNDIR_LEARNER_LOCK, path, sizeof path) != 0)
    return pb_err_set(err, PB_EINVAL, "%.200s: run directory path too long",
                      run_dir);
  pb_err_t e;
  pb_err_clear(&e);
  int fd = pb_lock_file(path, &e);
  if (fd >= 0) return fd;
  return pb_err_set(err, e.code, "%s%s",
                    e.code == PB_EAGAIN
                        ? "this run dir is in use by another learner: "
                        : "",
                    e.msg);
}

/* 1 when another open file holds a lock on path (a shared non-blocking
 * flock fails), 0 when not, PB_EIO. */
static int probe_lock(const char *path, pb_err_t *err) {
  int fd = open(path, O_RDONLY | O_CLOEXEC);
  if (fd < 0)
    return errno == ENOENT ? 0
                           : pb_err_set(err, PB_EIO, "%s: cannot open: %s",
                                        path, strerror(errno));
  int held = 0;
  if (flock(fd, LOCK_SH | LOCK_NB) == 0)
    flock(fd, LOCK_UN);
  else if (errno == EWOULDBLOCK)
    held = 1;
  else
    held = pb_err_set(err, PB_EIO, "%s: cannot probe the lock: %s", path,
                      strerror(errno));
  close(fd);
  return held;
}

int pb_rundir_lock_held(const char *run_dir, const char *name, int probe,
                        long *pid, pb_err_t *err) {
  if (pid != NULL) *pid = 0;
  if (run_dir == NULL || name == NULL)
    return pb_err_set(err, PB_EINVAL, "pb_rundir_lock_held: NULL argument");
  char path[PB_RUNDIR_PATH_MAX];
  if (pb_rundir_path(run_dir, name, path, sizeof path) != 0)
    return pb_err_set(err, PB_EINVAL, "%.200s: run directory path too long",
                      run_dir);
  struct stat st;
  if (stat(path, &st) != 0) return 0; /* no lock file: nobody holds it */
  FILE *f = fopen("/proc/locks", "r");
  if (f == NULL)
    return pb_err_set(err, PB_EIO, "/proc/locks: cannot open: %s",
                      strerror(errno));
  /* "1: FLOCK  ADVISORY  WRITE 1234 fe:00:10952937 0 EOF"; a process
   * waiting for a lock has "1: -> FLOCK ..." and does not hold it. */
  char line[256];
  int held = 0;
  while (!held && fgets(line, sizeof line, f) != NULL) {
    char kind[16], mode[16], rw[16];
    long who = 0;
    unsigned int maj = 0, min = 0;
    unsigned long long ino = 0;
    const char *p = strchr(line, ':');
    if (p == NULL || strstr(line, "->") != NULL) continue;
    if (sscanf(p + 1, "%15s %15s %15s %ld %x:%x:%llu", kind, mode, rw, &who,
               &maj, &min, &ino) != 7 ||
        strcmp(kind, "FLOCK") != 0)
      continue;
    if (ino == (unsigned long long)st.st_ino && maj == major(st.st_dev) &&
        min == minor(st.st_dev)) {
      held = 1;
      if (pid != NULL) *pid = who > 0 ? who : 0;
    }
  }
  fclose(f);
  if (!held && probe) held = probe_lock(path, err);
  return held;
}

/* ---- one run per directory, one run id per start ---------------------- */

/* Size of RUN_DIR/name, or -1 when it does not exist. */
static long long file_size(const char *run_dir, const char *name) {
  char path[PB_RUNDIR_PATH_MAX];
  struct stat st;
  if (pb_rundir_path(run_dir, name, path, sizeof path) != 0) return -1;
  return stat(path, &st) == 0 ? (long long)st.st_size : -1;
}

int pb_rundir_check_new(const char *run_dir, pb_err_t *err) {
  if (run_dir == NULL)
    return pb_err_set(err, PB_EINVAL, "pb_rundir_check_new: NULL run dir");
  if (strlen(run_dir) >= PB_RUNDIR_DIR_MAX)
    return pb_err_set(err, PB_EINVAL, "%.200s: run directory path too long",
                      run_dir);
  uint64_t *v = NULL;
  size_t n = 0;
  int rc = pb_rundir_versions(run_dir, &v, &n, err);
  if (rc != 0) return rc;
  char what[160] = "";
  size_t len = 0;
  if (n > 0)
    len += (size_t)snprintf(what, sizeof what, "checkpoints up to version %llu",
                            (unsigned long long)v[n - 1]);
  free(v);
  static const char *const hist[] = {PB_RUNDIR_METRICS, PB_RUNDIR_ELO_CSV};
  for (int i = 0; i < 2; i++)
    if (file_size(run_dir, hist[i]) > 0 && len < sizeof what)
      len += (size_t)snprintf(what + len, sizeof what - len, "%s%s",
                              len ? ", " : "", hist[i]);
  if (len == 0) return 0;
  return pb_err_set(err, PB_ECONFIG,
                    "%.200s already holds a run (%s%s): not starting a new "
                    "run over it. --resume continues that run; --restart "
                    "continues it too, and starts it over only if its "
                    "checkpoints are gone (moving its history aside); or "
                    "give this run another directory (--run-dir, run.dir)",
                    run_dir, what, n == 0 ? ", but no checkpoint" : "");
}

/* The part of run.name that starts a run id: at most this many bytes, so
 * that "-" and 8 hex digits fit in PB_RUNDIR_RUN_ID_MAX. */
#define PB__RUN_ID_NAME 55

int pb_rundir_new_run_id(const char *name, char *buf, size_t n, pb_err_t *err) {
  if (name == NULL || name[0] == '\0' || buf == NULL ||
      n < (size_t)PB_RUNDIR_RUN_ID_MAX + 1)
    return pb_err_set(err, PB_EINVAL,
                      "pb_rundir_new_run_id: empty name or buffer too small");
  uint32_t r = 0;
  ssize_t got = -1;
  for (int i = 0; i < 100 && got < 0; i++) {
    got = getrandom(&r, sizeof r, 0);
    if (got < 0 && errno != EINTR) break;
  }
  if (got != (ssize_t)sizeof r)
    return pb_err_set(err, PB_EIO, "cannot draw a run id: getrandom: %s",
                      got < 0 ? strerror(errno) : "short read");
  snprintf(buf, n, "%.*s-%08x", PB__RUN_ID_NAME, name, (unsigned)r);
  return 0;
}

int pb_rundir_run_id_check(const char *name, const char *id, pb_err_t *err) {
  if (name == NULL || id == NULL)
    return pb_err_set(err, PB_EINVAL, "pb_rundir_run_id_check: NULL argument");
  size_t cut = strnlen(name, PB__RUN_ID_NAME), len = strlen(id);
  if (len > PB_RUNDIR_RUN_ID_MAX)
    return pb_err_set(err, PB_EINVAL,
                      "run id '%.80s...' is %zu bytes long, at most %d allowed",
                      id, len, PB_RUNDIR_RUN_ID_MAX);
  for (size_t i = 0; i < len; i++)
    if ((unsigned char)id[i] < 0x21 || (unsigned char)id[i] > 0x7e)
      return pb_err_set(err, PB_EINVAL,
                        "run id '%s': byte 0x%02x at %zu; only printable ASCII "
                        "without spaces is allowed",
                        id, (unsigned char)id[i], i);
  if (len <= cut + 1 || strncmp(id, name, cut) != 0 || id[cut] != '-')
    return pb_err_set(err, PB_EINVAL,
                      "run id '%s' is not one of run '%.*s' (NAME-SUFFIX, as "
                      "the learner writes it to RUN_DIR/" PB_RUNDIR_RUN_ID ")",
                      id, (int)cut, name);
  return 0;
}

/* ---- taking back a failed start ------------------------------------- */

void pb_rundir_undo_init(pb_rundir_undo_t *u) {
  u->n = 0;
}

static int undo_add(pb_rundir_undo_t *u, const char *path, int is_dir) {
  if (u->n >= PB_RUNDIR_UNDO_MAX || strlen(path) >= PB_RUNDIR_PATH_MAX)
    return 0;
  snprintf(u->path[u->n], PB_RUNDIR_PATH_MAX, "%s", path);
  u->is_dir[u->n] = is_dir;
  u->n++;
  return 1;
}

int pb_rundir_undo_mkdir(pb_rundir_undo_t *u, const char *dir, pb_err_t *err) {
  char buf[PB_RUNDIR_PATH_MAX];
  size_t n = dir != NULL ? strlen(dir) : 0;
  if (n == 0 || n >= sizeof buf)
    return pb_err_set(err, PB_EINVAL, "bad directory path '%.200s'",
                      dir != NULL ? dir : "(null)");
  memcpy(buf, dir, n + 1);
  for (size_t i = 1; i <= n; i++) {
    if (buf[i] != '/' && buf[i] != '\0') continue;
    char c = buf[i];
    buf[i] = '\0';
    if (mkdir(buf, 0755) == 0)
      undo_add(u, buf, 1);
    else if (errno != EEXIST)
      return pb_err_set(err, PB_EIO, "cannot create directory '%s': %s", buf,
                        strerror(errno));
    buf[i] = c;
  }
  struct stat st;
  if (stat(dir, &st) != 0 || !S_ISDIR(st.st_mode))
    return pb_err_set(err, PB_EIO, "'%s' is not a directory", dir);
  return 0;
}

int pb_rundir_undo_note(pb_rundir_undo_t *u, const char *path) {
  struct stat st;
  if (lstat(path, &st) == 0 || errno != ENOENT) return 0;
  return undo_add(u, path, 0);
}

void pb_rundir_undo_run(pb_rundir_undo_t *u, pb_log_t *log) {
  for (int i = u->n - 1; i >= 0; i--) {
    const char *p = u->path[i];
    if (u->is_dir[i] ? rmdir(p) == 0 : unlink(p) == 0) {
      if (log != NULL)
        pb_log_info(log, "failed start: removed %s (made by this start)", p);
    }
  }
  u->n = 0;
}
