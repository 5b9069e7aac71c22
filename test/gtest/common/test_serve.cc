/**
 * One listening loop for the suites' remote peers (test_serve.h).
 */
#include "test_serve.h"

#include <netinet/in.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

namespace test_common {

int serve_forever(const char *name, const char *port_str,
                  int (*serve_one)(int fd))
{
    struct sockaddr_in addr = {};
    int lfd, one = 1;
    char *end;
    long port = strtol(port_str, &end, 10);

    if ((*end != '\0') || (port <= 0) || (port > 65535)) {
        fprintf(stderr, "%s: bad port '%s'\n", name, port_str);
        return 2;
    }
    lfd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (lfd < 0) {
        fprintf(stderr, "%s: socket: %m\n", name);
        return 1;
    }
    setsockopt(lfd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
    addr.sin_family      = AF_INET;
    addr.sin_addr.s_addr = htonl(INADDR_ANY);
    addr.sin_port        = htons((uint16_t)port);
    if ((bind(lfd, (struct sockaddr*)&addr, sizeof(addr)) != 0) ||
        (listen(lfd, 16) != 0)) {
        fprintf(stderr, "%s: bind/listen: %m\n", name);
        close(lfd);
        return 1;
    }
    printf("%s: serving peers on port %ld\n", name, port);
    fflush(stdout);

    for (;;) {
        struct pollfd pfd = {lfd, POLLIN, 0};
        int fd;

        while (waitpid(-1, NULL, WNOHANG) > 0) {
        }
        if (poll(&pfd, 1, 1000) <= 0) {
            continue;
        }
        fd = accept4(lfd, NULL, NULL, SOCK_CLOEXEC);
        if (fd < 0) {
            continue;
        }
        /* each peer forks from a process without UCX or verbs resources */
        pid_t pid = fork();
        if (pid == 0) {
            close(lfd);
            _exit(serve_one(fd));
        }
        if (pid < 0) {
            fprintf(stderr, "%s: fork: %m\n", name);
        }
        close(fd);
    }
}

} // namespace test_common
