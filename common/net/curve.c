/* curve.c - ZeroMQ CURVE keys, sockets and the learner's ZAP handler (see
 * curve.h). */
#include "curve.h"

#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>
#include <zmq.h>

#include "lines.h"
#include "util.h"

/* ---- key files -------------------------------------------------------- */

static int write_text(const char *path, const char *text, int mode,
                      pb_err_t *err) {
  int fd = open(path, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, mode);
  if (fd < 0)
    return pb_err_set(err, errno == EEXIST ? PB_EINVAL : PB_EIO,
                      "%s: %s", path,
                      errno == EEXIST ? "exists already (not overwritten)"
                                      : strerror(errno));
  size_t n = strlen(text);
  int ok = write(fd, text, n) == (ssize_t)n && fsync(fd) == 0;
  close(fd);
  if (!ok) return pb_err_set(err, PB_EIO, "%s: write failed", path);
  return 0;
}

static int write_pair(const char *dir, const char *name, char *pub_out,
                      pb_err_t *err) {
  char pub[PB_CURVE_Z85 + 1], sec[PB_CURVE_Z85 + 1];
  if (zmq_curve_keypair(pub, sec) != 0)
    return pb_err_set(err, PB_EUNSUPP,
                      "keys: this libzmq cannot make CURVE keys (%s)",
                      zmq_strerror(errno));
  char path[4200], text[256];
  snprintf(path, sizeof path, "%s/%s.key", dir, name);
  snprintf(text, sizeof text,
           "# probs CURVE key pair (%s): keep it secret\npublic-key %s\n"
           "secret-key %s\n",
           name, pub, sec);
  int rc = write_text(path, text, 0600, err);
  if (rc == 0) {
    snprintf(path, sizeof path, "%s/%s.pub", dir, name);
    snprintf(text, sizeof text, "# probs CURVE public key (%s)\npublic-key %s\n",
             name, pub);
    rc = write_text(path, text, 0644, err);
  }
  memcpy(pub_out, pub, sizeof pub);
  return rc;
}

/* Appends "# NAME\nKEY\n" lines to DIR/authorized_keys under its lock
 * file (several processes may add workers at once), rewriting the file
 * atomically. */
static int authorize(const char *dir, const char *const *names,
                     char (*pubs)[PB_CURVE_Z85 + 1], int n, pb_err_t *err) {
  char path[4200], lock[4300];
  snprintf(path, sizeof path, "%s/authorized_keys", dir);
  snprintf(lock, sizeof lock, "%s.lock", path);
  int fd = open(lock, O_RDWR | O_CREAT | O_CLOEXEC, 0600);
  if (fd < 0 || flock(fd, LOCK_EX) != 0) {
    if (fd >= 0) close(fd);
    return pb_err_set(err, PB_EIO, "%s: cannot lock: %s", lock,
                      strerror(errno));
  }
  char *old = NULL;
  size_t len = 0;
  int rc = 0;
  if (access(path, F_OK) == 0)
    rc = pb_read_file(path, 1 << 20, &old, &len, err);
  else
    old = strdup("# worker public keys the learner accepts, one per line\n");
  if (rc == 0 && old == NULL) rc = pb_err_set(err, PB_ENOMEM, "out of memory");
  char *text = NULL;
  size_t tlen = 0;
  FILE *f = rc == 0 ? open_memstream(&text, &tlen) : NULL;
  if (rc == 0 && f == NULL) rc = pb_err_set(err, PB_ENOMEM, "out of memory");
  if (rc == 0) {
    fputs(old, f);
    if (strlen(old) > 0 && old[strlen(old) - 1] != '\n') fputc('\n', f);
    for (int i = 0; i < n; i++) fprintf(f, "# %s\n%s\n", names[i], pubs[i]);
    fclose(f);
    rc = pb_write_file(path, text, tlen, err);
  }
  free(old);
  free(text);
  flock(fd, LOCK_UN);
  close(fd);
  return rc;
}

/* A key's name: what a file name and a comment line can hold. */
static int name_ok(const char *name) {
  size_t n = strlen(name);
  if (n < 1 || n > PB_CURVE_NAME_MAX || !strcmp(name, "learner") ||
      name[0] == '.' || name[0] == '-')
    return 0;
  for (size_t i = 0; i < n; i++)
    if (!isalnum((unsigned char)name[i]) && name[i] != '-' &&
        name[i] != '_' && name[i] != '.')
      return 0;
  return 1;
}

int pb_curve_make_dir(const char *dir, int workers, pb_err_t *err) {
  if (dir == NULL || *dir == '\0')
    return pb_err_set(err, PB_EINVAL, "keys: no directory given");
  if (workers < 0 || workers > PB_CURVE_MAX_WORKERS)
    return pb_err_set(err, PB_EINVAL, "keys: %d worker keys (0..%d)", workers,
                      PB_CURVE_MAX_WORKERS);
  if (!zmq_has("curve"))
    return pb_err_set(err, PB_EUNSUPP,
                      "keys: this libzmq was built without CURVE");
  int rc = pb_mkdir_p(dir, err);
  if (rc != 0) return rc;
  char path[4200];
  snprintf(path, sizeof path, "%s/learner.key", dir);
  if (access(path, F_OK) == 0)
    return pb_err_set(err, PB_EINVAL, "%s exists already (not overwritten)",
                      path);
  char lpub[PB_CURVE_Z85 + 1];
  rc = write_pair(dir, "learner", lpub, err);
  /* One key for every worker (workers 0), or one each. */
  int n = workers > 0 ? workers : 1;
  char(*pubs)[PB_CURVE_Z85 + 1] = calloc((size_t)n, sizeof *pubs);
  char(*names)[24] = calloc((size_t)n, sizeof *names);
  const char **np = calloc((size_t)n, sizeof *np);
  if (rc == 0 && (pubs == NULL || names == NULL || np == NULL))
    rc = pb_err_set(err, PB_ENOMEM, "keys: out of memory");
  for (int i = 0; i < n && rc == 0; i++) {
    if (workers > 0)
      snprintf(names[i], sizeof names[i], "worker-%d", i + 1);
    else
      snprintf(names[i], sizeof names[i], "worker");
    np[i] = names[i];
    rc = write_pair(dir, names[i], pubs[i], err);
  }
  if (rc == 0) rc = authorize(dir, np, pubs, n, err);
  free(pubs);
  free(names);
  free(np);
  return rc;
}

int pb_curve_add_worker(const char *dir, const char *name, pb_err_t *err) {
  if (dir == NULL || *dir == '\0' || name == NULL)
    return pb_err_set(err, PB_EINVAL, "keys: no directory or name given");
  if (!name_ok(name))
    return pb_err_set(err, PB_EINVAL,
                      "keys: worker name '%.80s': 1..%d characters of "
                      "A-Z a-z 0-9 . _ -, not starting with . or -, and not "
                      "'learner'",
                      name, PB_CURVE_NAME_MAX);
  if (!zmq_has("curve"))
    return pb_err_set(err, PB_EUNSUPP,
                      "keys: this libzmq was built without CURVE");
  char path[4200];
  snprintf(path, sizeof path, "%s/learner.pub", dir);
  if (access(path, R_OK) != 0)
    return pb_err_set(err, PB_ENOTFOUND,
                      "%s: no learner key here (make the run's keys first: "
                      "probs keys %s)",
                      path, dir);
  char pub[PB_CURVE_Z85 + 1];
  int rc = write_pair(dir, name, pub, err);
  const char *np[1] = {name};
  if (rc == 0) rc = authorize(dir, np, &pub, 1, err);
  return rc;
}

/* A Z85 key: exactly 40 characters of Z85's alphabet. */
static int z85_key_ok(const char *s, size_t n) {
  static const char z85[] =
      "0123456789abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ"
      ".-:+=^!/*?&<>()[]{}@%$#";
  if (n != PB_CURVE_Z85) return 0;
  for (size_t i = 0; i < n; i++)
    if (s[i] == '\0' || strchr(z85, s[i]) == NULL) return 0;
  return 1;
}

int pb_curve_load(const char *path, int need_secret, pb_curve_keys_t *k,
                  pb_err_t *err) {
  char *text = NULL;
  size_t len = 0;
  int rc = pb_read_file(path, 65536, &text, &len, err);
  if (rc != 0) return rc;
  memset(k, 0, sizeof *k);
  pb_lines_t it;
  pb_lines_init_w(&it, text, len);
  char *line = NULL;
  size_t ll = 0;
  while (pb_lines_cut(&it, &line, &ll) == 1) {
    int line_no = it.lineno;
    if (line[0] == '#' || line[strspn(line, " \t")] == '\0') continue;
    char *key = NULL;
    char *dst = NULL;
    if (!strncmp(line, "public-key ", 11)) {
      key = line + 11;
      dst = k->pub;
    } else if (!strncmp(line, "secret-key ", 11)) {
      key = line + 11;
      dst = k->sec;
    }
    if (key == NULL || !z85_key_ok(key, strlen(key))) {
      free(text);
      return pb_err_set(err, PB_ECONFIG,
                        "%s: line %d is not \"public-key KEY\" or "
                        "\"secret-key KEY\" with a 40-character Z85 key",
                        path, line_no);
    }
    memcpy(dst, key, PB_CURVE_Z85 + 1);
  }
  free(text);
  if (k->pub[0] == '\0')
    return pb_err_set(err, PB_ECONFIG, "%s: no public-key line", path);
  if (need_secret && k->sec[0] == '\0')
    return pb_err_set(err, PB_ECONFIG,
                      "%s: no secret-key line (a .pub file where a .key file "
                      "is needed?)",
                      path);
  return 0;
}

int pb_curve_server(void *sock, const pb_curve_keys_t *k, pb_err_t *err) {
  int one = 1;
  if (zmq_setsockopt(sock, ZMQ_ZAP_DOMAIN, "probs", 5) != 0 ||
      zmq_setsockopt(sock, ZMQ_CURVE_SERVER, &one, sizeof one) != 0 ||
      zmq_setsockopt(sock, ZMQ_CURVE_SECRETKEY, k->sec, PB_CURVE_Z85 + 1) != 0)
    return pb_err_set(err, PB_EIO, "CURVE server socket: %s",
                      zmq_strerror(errno));
  return 0;
}

int pb_curve_client(void *sock, const pb_curve_keys_t *mine,
                    const char *server_pub, pb_err_t *err) {
  if (zmq_setsockopt(sock, ZMQ_CURVE_SERVERKEY, server_pub,
                     PB_CURVE_Z85 + 1) != 0 ||
      zmq_setsockopt(sock, ZMQ_CURVE_PUBLICKEY, mine->pub, PB_CURVE_Z85 + 1) !=
          0 ||
      zmq_setsockopt(sock, ZMQ_CURVE_SECRETKEY, mine->sec, PB_CURVE_Z85 + 1) !=
          0)
    return pb_err_set(err, PB_EIO, "CURVE client socket: %s",
                      zmq_strerror(errno));
  return 0;
}

int pb_curve_client_dir(const char *dir, const char *key, void *const *socks,
                        int n, pb_err_t *err) {
  if (dir == NULL || *dir == '\0') return 0;
  char path[4200];
  pb_curve_keys_t mine, learner;
  snprintf(path, sizeof path, "%s/%s.key", dir,
           key != NULL && *key != '\0' ? key : "worker");
  int rc = pb_curve_load(path, 1, &mine, err);
  if (rc != 0) return rc;
  snprintf(path, sizeof path, "%s/learner.pub", dir);
  if ((rc = pb_curve_load(path, 0, &learner, err)) != 0) return rc;
  for (int i = 0; i < n && rc == 0; i++)
    rc = pb_curve_client(socks[i], &mine, learner.pub, err);
  return rc;
}

/* ---- the ZAP handler -------------------------------------------------- */

struct pb_zap {
  void *rep;
  pthread_t thr;
  atomic_int stop;
  int started;
  uint8_t (*keys)[32]; /* the zap thread's own, after the start */
  int nkeys;
  atomic_int count; /* nkeys, for other threads */
  char path[4200];  /* authorized_keys, read again when it changes */
  struct timespec mtime;
  off_t size;
  pb_zap_note_fn *note;
  void *ctx;
};

static int listed(const pb_zap_t *z, const uint8_t *key) {
  for (int i = 0; i < z->nkeys; i++)
    if (memcmp(z->keys[i], key, 32) == 0) return 1;
  return 0;
}

static int load_authorized(pb_zap_t *z, const char *path, pb_err_t *err);

/* An unknown key: authorized_keys may have gained it since it was read
 * (`probs keys DIR --add-worker NAME`). Reads the file again when its
 * time or size changed; a file that no longer parses leaves the list as
 * it was. Returns 1 if the key is listed now. */
static int listed_after_reload(pb_zap_t *z, const uint8_t *key) {
  struct stat st;
  if (stat(z->path, &st) != 0) return 0;
  if (st.st_mtim.tv_sec == z->mtime.tv_sec &&
      st.st_mtim.tv_nsec == z->mtime.tv_nsec && st.st_size == z->size)
    return 0;
  z->mtime = st.st_mtim;
  z->size = st.st_size;
  pb_zap_t fresh;
  memset(&fresh, 0, sizeof fresh);
  pb_err_t e;
  pb_err_clear(&e);
  if (load_authorized(&fresh, z->path, &e) != 0) {
    free(fresh.keys);
    return 0;
  }
  free(z->keys);
  z->keys = fresh.keys;
  z->nkeys = fresh.nkeys;
  atomic_store(&z->count, fresh.nkeys);
  return listed(z, key);
}

/* Receives one frame into buf (truncated to n); returns its size or -1. */
static int recv_frame(void *s, void *buf, size_t n, int *more) {
  int r = zmq_recv(s, buf, n, 0);
  int m = 0;
  size_t ml = sizeof m;
  zmq_getsockopt(s, ZMQ_RCVMORE, &m, &ml);
  *more = m;
  return r;
}

static void *zap_main(void *arg) {
  pb_zap_t *z = arg;
  while (!atomic_load(&z->stop)) {
    zmq_pollitem_t it = {z->rep, 0, ZMQ_POLLIN, 0};
    if (zmq_poll(&it, 1, 100) <= 0) continue;
    /* version, request id, domain, address, identity, mechanism,
     * credentials... */
    char f[8][256];
    int len[8] = {0}, nf = 0, more = 1;
    while (more) {
      char junk[256];
      char *dst = nf < 8 ? f[nf] : junk;
      int r = recv_frame(z->rep, dst, 255, &more);
      if (r < 0) break;
      if (nf < 8) len[nf] = r > 255 ? 255 : r;
      nf++;
    }
    if (nf < 6) continue; /* not a ZAP request: nothing sane to answer */
    const char *status = "400", *text = "unknown key";
    char key[PB_CURVE_Z85 + 1] = "";
    f[3][len[3]] = '\0'; /* the address */
    int is_curve = len[5] == 5 && memcmp(f[5], "CURVE", 5) == 0;
    if (is_curve && nf >= 7 && len[6] == 32) {
      zmq_z85_encode(key, (uint8_t *)f[6], 32);
      if (listed(z, (uint8_t *)f[6]) ||
          listed_after_reload(z, (uint8_t *)f[6])) {
        status = "200";
        text = "OK";
      }
    } else {
      text = "CURVE required";
    }
    if (z->note != NULL)
      z->note(z->ctx, status[0] == '2', f[3], key[0] ? key : "(none)");
    zmq_send(z->rep, "1.0", 3, ZMQ_SNDMORE);
    zmq_send(z->rep, f[1], (size_t)len[1], ZMQ_SNDMORE);
    zmq_send(z->rep, status, 3, ZMQ_SNDMORE);
    zmq_send(z->rep, text, strlen(text), ZMQ_SNDMORE);
    zmq_send(z->rep, key, strlen(key), ZMQ_SNDMORE); /* user id */
    zmq_send(z->rep, "", 0, 0);                      /* metadata */
  }
  zmq_close(z->rep);
  return NULL;
}

static int load_authorized(pb_zap_t *z, const char *path, pb_err_t *err) {
  char *text = NULL;
  size_t len = 0;
  int rc = pb_read_file(path, 1 << 20, &text, &len, err);
  if (rc != 0) return rc;
  int cap = 0;
  pb_lines_t it;
  pb_lines_init_w(&it, text, len);
  char *line = NULL;
  size_t ll = 0;
  while (pb_lines_cut(&it, &line, &ll) == 1) {
    int line_no = it.lineno;
    /* '#' is a Z85 character too: only a line starting with it is a
     * comment. */
    char *k = line + strspn(line, " \t");
    k[strcspn(k, " \t")] = '\0';
    if (*k == '\0' || *k == '#') continue;
    if (!z85_key_ok(k, strlen(k))) {
      free(text);
      return pb_err_set(err, PB_ECONFIG,
                        "%s: line %d is not a 40-character Z85 public key",
                        path, line_no);
    }
    if (z->nkeys == cap) {
      cap = cap ? 2 * cap : 16;
      void *g = realloc(z->keys, (size_t)cap * 32);
      if (g == NULL) {
        free(text);
        return pb_err_set(err, PB_ENOMEM, "zap: out of memory");
      }
      z->keys = g;
    }
    zmq_z85_decode(z->keys[z->nkeys++], k);
  }
  free(text);
  if (z->nkeys == 0)
    return pb_err_set(err, PB_ECONFIG,
                      "%s lists no key: no worker could ever join", path);
  return 0;
}

pb_zap_t *pb_zap_start(void *zctx, const char *authorized_path,
                       pb_zap_note_fn *note, void *ctx, pb_err_t *err) {
  pb_zap_t *z = calloc(1, sizeof *z);
  if (z == NULL) {
    pb_err_set(err, PB_ENOMEM, "zap: out of memory");
    return NULL;
  }
  z->note = note;
  z->ctx = ctx;
  snprintf(z->path, sizeof z->path, "%s", authorized_path);
  struct stat st;
  if (stat(authorized_path, &st) == 0) {
    z->mtime = st.st_mtim;
    z->size = st.st_size;
  }
  if (load_authorized(z, authorized_path, err) != 0) goto fail;
  atomic_store(&z->count, z->nkeys);
  z->rep = zmq_socket(zctx, ZMQ_REP);
  int linger = 0;
  if (z->rep == NULL ||
      zmq_setsockopt(z->rep, ZMQ_LINGER, &linger, sizeof linger) != 0 ||
      zmq_bind(z->rep, "inproc://zeromq.zap.01") != 0) {
    pb_err_set(err, PB_EIO, "zap: cannot bind the handler: %s",
               zmq_strerror(errno));
    if (z->rep) zmq_close(z->rep);
    goto fail;
  }
  if (pthread_create(&z->thr, NULL, zap_main, z) != 0) {
    zmq_close(z->rep);
    pb_err_set(err, PB_EIO, "zap: cannot start its thread");
    goto fail;
  }
  z->started = 1;
  return z;
fail:
  free(z->keys);
  free(z);
  return NULL;
}

int pb_zap_count(pb_zap_t *z) {
  return z ? atomic_load(&z->count) : 0;
}

void pb_zap_stop(pb_zap_t **zp) {
  if (zp == NULL || *zp == NULL) return;
  pb_zap_t *z = *zp;
  if (z->started) {
    atomic_store(&z->stop, 1);
    pthread_join(z->thr, NULL);
  }
  free(z->keys);
  free(z);
  *zp = NULL;
}
