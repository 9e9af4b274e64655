// The fixed costs of an 800 MB k-mer table, apart from any counting
// (BENCHMARKS.md, "k-mer tables: fixed costs"): first touch of fresh
// anonymous memory with and without transparent huge pages, a second pass
// over memory already backed, writing the table into the page cache (as a
// save does), and first touch of a shared mapping of the output file (as
// `Countgraph::map_tables_to` counts), sparse or fallocated.
//
//   cc -O2 -o /tmp/fixed-costs bench/kmer/fixed-costs.c
//   for m in anon_thp anon_4k shared shared_falloc; do /tmp/fixed-costs $m DIR/t.tmp; done
//   /tmp/fixed-costs write_freeing DIR/t.tmp
//
// DIR: a directory on the disk the outputs go to (the file is removed).
// Prints wall, CPU and system seconds of each step. On a VM the first touch
// costs what the host charges for memory the guest has not used lately:
// run each mode a few times, and alternate them.
#define _GNU_SOURCE
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/time.h>
#include <fcntl.h>
#include <unistd.h>
#include <time.h>
#ifndef MADV_POPULATE_WRITE
#define MADV_POPULATE_WRITE 23
#endif
static double now(){struct timespec t;clock_gettime(CLOCK_MONOTONIC,&t);return t.tv_sec+t.tv_nsec*1e-9;}
static double cpu(){struct rusage r;getrusage(RUSAGE_SELF,&r);return r.ru_utime.tv_sec+r.ru_utime.tv_usec*1e-6+r.ru_stime.tv_sec+r.ru_stime.tv_usec*1e-6;}
static double sys_(){struct rusage r;getrusage(RUSAGE_SELF,&r);return r.ru_stime.tv_sec+r.ru_stime.tv_usec*1e-6;}
#define N (800UL<<20)
static double w0,c0,s0;
static void start(){w0=now();c0=cpu();s0=sys_();}
static void stop(const char*n){printf("%-34s wall %.3f cpu %.3f sys %.3f\n",n,now()-w0,cpu()-c0,sys_()-s0);fflush(stdout);}
static void touch(char*p){for(size_t i=0;i<N;i+=4096)p[i]=1;}
int main(int argc,char**argv){
  const char*mode=argv[1]; const char*path=argc>2?argv[2]:"tbl.tmp";
  if(!strcmp(mode,"anon_thp")||!strcmp(mode,"anon_4k")){
    start(); char*p=mmap(0,N,PROT_READ|PROT_WRITE,MAP_PRIVATE|MAP_ANONYMOUS,-1,0);
    if(!strcmp(mode,"anon_thp"))madvise(p,N,MADV_HUGEPAGE); else madvise(p,N,MADV_NOHUGEPAGE);
    touch(p); stop(mode); start(); memset(p,2,N); stop("  memset again (backed)");
    if(argc>2){ start(); int fd=open(path,O_CREAT|O_TRUNC|O_WRONLY,0644); size_t o=0; while(o<N){size_t l=N-o<(64UL<<20)?N-o:(64UL<<20); ssize_t w=pwrite(fd,p+o,l,o); o+=w;} close(fd); stop("  pwrite 800MB to new file"); unlink(path);}
  } else if(!strcmp(mode,"write_freeing")){
    char*p=mmap(0,N,PROT_READ|PROT_WRITE,MAP_PRIVATE|MAP_ANONYMOUS,-1,0); madvise(p,N,MADV_HUGEPAGE); touch(p);
    start(); int fd=open(path,O_CREAT|O_TRUNC|O_WRONLY,0644); size_t o=0; while(o<N){size_t l=N-o<(64UL<<20)?N-o:(64UL<<20); ssize_t w=pwrite(fd,p+o,l,o); madvise(p+o,l,MADV_DONTNEED); o+=w;} close(fd); stop("pwrite 800MB freeing behind"); unlink(path);
  } else if(!strncmp(mode,"shared",6)){
    start(); int fd=open(path,O_CREAT|O_TRUNC|O_RDWR,0644);
    if(strstr(mode,"falloc")) { if(fallocate(fd,0,0,N)) perror("fallocate"); } else ftruncate(fd,N);
    char*p=mmap(0,N,PROT_READ|PROT_WRITE,MAP_SHARED,fd,0);
    if(strstr(mode,"populate")) { if(madvise(p,N,MADV_POPULATE_WRITE)) perror("populate"); }
    touch(p); stop(mode); start(); memset(p,2,N); stop("  memset again"); start(); munmap(p,N); close(fd); stop("  munmap+close"); unlink(path);
  }
  return 0;
}
