/* bench_onednn.c — oneDNN's bf16 matmul beside fastlora's fl_gemm_bf16_nt on the LoRA trainer's
 * GEMM shapes: C (M, N) f32 = A (M, K) f32 · B (N, K)ᵀ bf16, A rounded to bf16 (both round it),
 * B reordered once into oneDNN's preferred layout (as frozen weights would be at load: not timed),
 * A's conversion timed with oneDNN's product. Best of 5 per shape; prints both rates, oneDNN's
 * implementation (brg:avx512_core_amx on AMX, brg:avx512_core_bf16 on AVX512_BF16, ...) and the
 * largest difference of the results. A measuring tool for the CPU GEMM choice, not a test.
 *
 *   apt-get install libdnnl-dev; make
 *   gcc -O2 -std=c11 -D_GNU_SOURCE -fopenmp -Isrc dev/cpu/bench_onednn.c build/libfastlora.a -o build/bench_onednn \
 *       -ldnnl -ljansson -lyaml -lpcre2-8 -lcrypto -L/usr/lib/x86_64-linux-gnu/openblas-openmp -lopenblas -lm
 *   OMP_NUM_THREADS=2 build/bench_onednn
 */
#include <dnnl.h>
#include <omp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include "backend/cpu/gemm_bf16.h"
#include "backend/cpu/cpu_isa.h"
static double now(void){struct timespec t;clock_gettime(CLOCK_MONOTONIC,&t);return t.tv_sec+t.tv_nsec*1e-9;}
static uint16_t bf(float f){uint32_t u;memcpy(&u,&f,4);u+=0x7fff+((u>>16)&1);return u>>16;}
#define CK(x) do{dnnl_status_t s_=(x);if(s_!=dnnl_success){printf("dnnl error %d at %s\n",s_,#x);exit(1);}}while(0)
int main(int argc,char**argv){
  int shapes[][3]={{1024,2048,2048},{2048,576,576},{2048,1536,576},{2048,576,1536},{1024,49152,576},{512,896,896},{4096,64,576}};
  dnnl_engine_t eng; CK(dnnl_engine_create(&eng,dnnl_cpu,0)); dnnl_stream_t st; CK(dnnl_stream_create(&st,eng,dnnl_stream_default_flags));
  for(unsigned si=0;si<sizeof shapes/sizeof*shapes;si++){
    int M=shapes[si][0],N=shapes[si][1],K=shapes[si][2];
    float *A=malloc(4ul*M*K),*C=malloc(4ul*M*N),*C2=malloc(4ul*M*N); uint16_t *B=malloc(2ul*N*K),*Ab=malloc(2ul*M*K);
    for(long i=0;i<(long)M*K;i++)A[i]=(float)((i*7919%1000)/1000.0-0.5);
    for(long i=0;i<(long)N*K;i++)B[i]=bf((float)((i*104729%1000)/1000.0-0.5)*0.1f);
    double best=1e9; for(int r=0;r<5;r++){double t=now();fl_gemm_bf16_nt(M,N,K,1.f,A,K,B,K,0.f,C,N);t=now()-t;if(t<best)best=t;}
    double fl_tf=2.0*M*N*K/best/1e12;
    /* oneDNN */
    dnnl_memory_desc_t a_md,b_md,b_any,c_md; dnnl_dims_t ad={M,K},bd={K,N},cd={M,N};
    CK(dnnl_memory_desc_init_by_tag(&a_md,2,ad,dnnl_bf16,dnnl_ab));
    dnnl_dims_t bstr={1,K}; CK(dnnl_memory_desc_init_by_strides(&b_md,2,bd,dnnl_bf16,bstr)); /* B(N,K) row-major = (K,N) with strides {1,K} */
    CK(dnnl_memory_desc_init_by_tag(&b_any,2,bd,dnnl_bf16,dnnl_format_tag_any));
    CK(dnnl_memory_desc_init_by_tag(&c_md,2,cd,dnnl_f32,dnnl_ab));
    dnnl_matmul_desc_t md; CK(dnnl_matmul_desc_init(&md,&a_md,&b_any,NULL,&c_md));
    dnnl_primitive_desc_t pd; CK(dnnl_primitive_desc_create(&pd,&md,NULL,eng,NULL));
    const char *impl; dnnl_primitive_desc_query(pd,dnnl_query_impl_info_str,0,&impl);
    const dnnl_memory_desc_t *bw=dnnl_primitive_desc_query_md(pd,dnnl_query_weights_md,0);
    dnnl_memory_t am,bm_plain,bm,cm; CK(dnnl_memory_create(&am,&a_md,eng,Ab)); CK(dnnl_memory_create(&bm_plain,&b_md,eng,B));
    CK(dnnl_memory_create(&bm,bw,eng,DNNL_MEMORY_ALLOCATE)); CK(dnnl_memory_create(&cm,&c_md,eng,C2));
    dnnl_primitive_desc_t rpd; CK(dnnl_reorder_primitive_desc_create(&rpd,&b_md,eng,bw,eng,NULL)); dnnl_primitive_t rp; CK(dnnl_primitive_create(&rp,rpd));
    dnnl_exec_arg_t ra[2]={{DNNL_ARG_FROM,bm_plain},{DNNL_ARG_TO,bm}}; CK(dnnl_primitive_execute(rp,st,2,ra)); dnnl_stream_wait(st);
    dnnl_primitive_t mp; CK(dnnl_primitive_create(&mp,pd));
    dnnl_exec_arg_t args[3]={{DNNL_ARG_SRC,am},{DNNL_ARG_WEIGHTS,bm},{DNNL_ARG_DST,cm}};
    double best2=1e9; for(int r=0;r<5;r++){double t=now();
      #pragma omp parallel for
      for(long i=0;i<(long)M*K;i++)Ab[i]=bf(A[i]);
      CK(dnnl_primitive_execute(mp,st,3,args)); dnnl_stream_wait(st); t=now()-t; if(t<best2)best2=t;}
    double dn_tf=2.0*M*N*K/best2/1e12, maxd=0; for(long i=0;i<(long)M*N;i++){double d=C[i]-C2[i];if(d<0)d=-d;if(d>maxd)maxd=d;}
    printf("%5d x %5d x %5d  fastlora %.3f TF/s  onednn %.3f TF/s (%s, incl. A->bf16)  ratio %.2f  max|diff| %.2g\n",M,N,K,fl_tf,dn_tf,impl,dn_tf/fl_tf,maxd);
    dnnl_primitive_destroy(mp);dnnl_primitive_destroy(rp);dnnl_primitive_desc_destroy(pd);dnnl_primitive_desc_destroy(rpd);
    dnnl_memory_destroy(am);dnnl_memory_destroy(bm);dnnl_memory_destroy(bm_plain);dnnl_memory_destroy(cm);
    free(A);free(B);free(C);free(C2);free(Ab);
  }
  return 0;
}
