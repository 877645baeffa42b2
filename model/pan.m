#define rand	pan_rand
#define pthread_equal(a,b)	((a)==(b))
#if defined(HAS_CODE) && defined(VERBOSE)
	#ifdef BFS_PAR
		bfs_printf("Pr: %d Tr: %d\n", II, t->forw);
	#else
		cpu_printf("Pr: %d Tr: %d\n", II, t->forw);
	#endif
#endif
	switch (t->forw) {
	default: Uerror("bad forward move");
	case 0:	/* if without executable clauses */
		continue;
	case 1: /* generic 'goto' or 'skip' */
		IfNotBlocked
		_m = 3; goto P999;
	case 2: /* generic 'else' */
		IfNotBlocked
		if (trpt->o_pm&1) continue;
		_m = 3; goto P999;

		 /* CLAIM no_op_lost */
	case 3: // STATE 1 - _spin_nvr.tmp:3 - [((!(!(sent))&&!(((((jd==3)||(jd==4))||(jd==2))||(jd==5)))))] (0:0:0 - 1)
		
#if defined(VERI) && !defined(NP)
#if NCLAIMS>1
		{	static int reported1 = 0;
			if (verbose && !reported1)
			{	int nn = (int) ((Pclaim *)pptr(0))->_n;
				printf("depth %ld: Claim %s (%d), state %d (line %d)\n",
					depth, procname[spin_c_typ[nn]], nn, (int) ((Pclaim *)pptr(0))->_p, src_claim[ (int) ((Pclaim *)pptr(0))->_p ]);
				reported1 = 1;
				fflush(stdout);
		}	}
#else
		{	static int reported1 = 0;
			if (verbose && !reported1)
			{	printf("depth %d: Claim, state %d (line %d)\n",
					(int) depth, (int) ((Pclaim *)pptr(0))->_p, src_claim[ (int) ((Pclaim *)pptr(0))->_p ]);
				reported1 = 1;
				fflush(stdout);
		}	}
#endif
#endif
		reached[5][1] = 1;
		if (!(( !( !(((int)now.sent)))&& !(((((((int)now.jd)==3)||(((int)now.jd)==4))||(((int)now.jd)==2))||(((int)now.jd)==5))))))
			continue;
		_m = 3; goto P999; /* 0 */
	case 4: // STATE 3 - _spin_nvr.tmp:4 - [(!(!(sent)))] (0:0:0 - 1)
		
#if defined(VERI) && !defined(NP)
#if NCLAIMS>1
		{	static int reported3 = 0;
			if (verbose && !reported3)
			{	int nn = (int) ((Pclaim *)pptr(0))->_n;
				printf("depth %ld: Claim %s (%d), state %d (line %d)\n",
					depth, procname[spin_c_typ[nn]], nn, (int) ((Pclaim *)pptr(0))->_p, src_claim[ (int) ((Pclaim *)pptr(0))->_p ]);
				reported3 = 1;
				fflush(stdout);
		}	}
#else
		{	static int reported3 = 0;
			if (verbose && !reported3)
			{	printf("depth %d: Claim, state %d (line %d)\n",
					(int) depth, (int) ((Pclaim *)pptr(0))->_p, src_claim[ (int) ((Pclaim *)pptr(0))->_p ]);
				reported3 = 1;
				fflush(stdout);
		}	}
#endif
#endif
		reached[5][3] = 1;
		if (!( !( !(((int)now.sent)))))
			continue;
		_m = 3; goto P999; /* 0 */
	case 5: // STATE 15 - _spin_nvr.tmp:13 - [(!(((((jd==3)||(jd==4))||(jd==2))||(jd==5))))] (0:0:0 - 1)
		
#if defined(VERI) && !defined(NP)
#if NCLAIMS>1
		{	static int reported15 = 0;
			if (verbose && !reported15)
			{	int nn = (int) ((Pclaim *)pptr(0))->_n;
				printf("depth %ld: Claim %s (%d), state %d (line %d)\n",
					depth, procname[spin_c_typ[nn]], nn, (int) ((Pclaim *)pptr(0))->_p, src_claim[ (int) ((Pclaim *)pptr(0))->_p ]);
				reported15 = 1;
				fflush(stdout);
		}	}
#else
		{	static int reported15 = 0;
			if (verbose && !reported15)
			{	printf("depth %d: Claim, state %d (line %d)\n",
					(int) depth, (int) ((Pclaim *)pptr(0))->_p, src_claim[ (int) ((Pclaim *)pptr(0))->_p ]);
				reported15 = 1;
				fflush(stdout);
		}	}
#endif
#endif
		reached[5][15] = 1;
		if (!( !(((((((int)now.jd)==3)||(((int)now.jd)==4))||(((int)now.jd)==2))||(((int)now.jd)==5)))))
			continue;
		_m = 3; goto P999; /* 0 */
	case 6: // STATE 22 - _spin_nvr.tmp:16 - [-end-] (0:0:0 - 1)
		
#if defined(VERI) && !defined(NP)
#if NCLAIMS>1
		{	static int reported22 = 0;
			if (verbose && !reported22)
			{	int nn = (int) ((Pclaim *)pptr(0))->_n;
				printf("depth %ld: Claim %s (%d), state %d (line %d)\n",
					depth, procname[spin_c_typ[nn]], nn, (int) ((Pclaim *)pptr(0))->_p, src_claim[ (int) ((Pclaim *)pptr(0))->_p ]);
				reported22 = 1;
				fflush(stdout);
		}	}
#else
		{	static int reported22 = 0;
			if (verbose && !reported22)
			{	printf("depth %d: Claim, state %d (line %d)\n",
					(int) depth, (int) ((Pclaim *)pptr(0))->_p, src_claim[ (int) ((Pclaim *)pptr(0))->_p ]);
				reported22 = 1;
				fflush(stdout);
		}	}
#endif
#endif
		reached[5][22] = 1;
		if (!delproc(1, II)) continue;
		_m = 3; goto P999; /* 0 */

		 /* PROC :init: */
	case 7: // STATE 1 - idem.pml:100 - [(run Client())] (0:0:0 - 1)
		IfNotBlocked
		reached[4][1] = 1;
		if (!(addproc(II, 1, 0, 0)))
			continue;
		_m = 3; goto P999; /* 0 */
	case 8: // STATE 2 - idem.pml:102 - [(run Other())] (0:0:0 - 1)
		IfNotBlocked
		reached[4][2] = 1;
		if (!(addproc(II, 1, 1, 0)))
			continue;
		_m = 3; goto P999; /* 0 */
	case 9: // STATE 3 - idem.pml:104 - [(run Worker(0))] (0:0:0 - 1)
		IfNotBlocked
		reached[4][3] = 1;
		if (!(addproc(II, 1, 2, 0)))
			continue;
		_m = 3; goto P999; /* 0 */
	case 10: // STATE 4 - idem.pml:105 - [(run Worker(1))] (0:0:0 - 1)
		IfNotBlocked
		reached[4][4] = 1;
		if (!(addproc(II, 1, 2, 1)))
			continue;
		_m = 3; goto P999; /* 0 */
	case 11: // STATE 5 - idem.pml:106 - [(run Env())] (0:0:0 - 1)
		IfNotBlocked
		reached[4][5] = 1;
		if (!(addproc(II, 1, 3, 0)))
			continue;
		_m = 3; goto P999; /* 0 */
	case 12: // STATE 7 - idem.pml:108 - [-end-] (0:0:0 - 1)
		IfNotBlocked
		reached[4][7] = 1;
		if (!delproc(1, II)) continue;
		_m = 3; goto P999; /* 0 */

		 /* PROC Env */
	case 13: // STATE 1 - env.pml:38 - [((1&&((nf<3)&&!(calm))))] (11:0:1 - 1)
		IfNotBlocked
		reached[3][1] = 1;
		if (!((1&&((((int)now.nf)<3)&& !(((int)now.calm))))))
			continue;
		/* merge: nf = (nf+1)(11, 2, 11) */
		reached[3][2] = 1;
		(trpt+1)->bup.oval = ((int)now.nf);
		now.nf = (((int)now.nf)+1);
#ifdef VAR_RANGES
		logval("nf", ((int)now.nf));
#endif
		;
		/* merge: printf('the database restarts\\n')(11, 3, 11) */
		reached[3][3] = 1;
		Printf("the database restarts\n");
		_m = 3; goto P999; /* 2 */
	case 14: // STATE 4 - env.pml:29 - [rst[0] = dst[0]] (0:20:5 - 1)
		IfNotBlocked
		reached[3][4] = 1;
		(trpt+1)->bup.ovals = grab_ints(5);
		(trpt+1)->bup.ovals[0] = ((int)now.rst[0]);
		now.rst[0] = ((int)now.dst[0]);
#ifdef VAR_RANGES
		logval("rst[0]", ((int)now.rst[0]));
#endif
		;
		/* merge: rtok[0] = dtok[0](20, 5, 20) */
		reached[3][5] = 1;
		(trpt+1)->bup.ovals[1] = ((int)now.rtok[0]);
		now.rtok[0] = ((int)now.dtok[0]);
#ifdef VAR_RANGES
		logval("rtok[0]", ((int)now.rtok[0]));
#endif
		;
		/* merge: rsc[0] = dsc[0](20, 6, 20) */
		reached[3][6] = 1;
		(trpt+1)->bup.ovals[2] = ((int)now.rsc[0]);
		now.rsc[0] = ((int)now.dsc[0]);
#ifdef VAR_RANGES
		logval("rsc[0]", ((int)now.rsc[0]));
#endif
		;
		/* merge: rfp[0] = dfp[0](20, 7, 20) */
		reached[3][7] = 1;
		(trpt+1)->bup.ovals[3] = ((int)now.rfp[0]);
		now.rfp[0] = ((int)now.dfp[0]);
#ifdef VAR_RANGES
		logval("rfp[0]", ((int)now.rfp[0]));
#endif
		;
		/* merge: rlap[0] = dlap[0](20, 8, 20) */
		reached[3][8] = 1;
		(trpt+1)->bup.ovals[4] = ((int)now.rlap[0]);
		now.rlap[0] = ((int)now.dlap[0]);
#ifdef VAR_RANGES
		logval("rlap[0]", ((int)now.rlap[0]));
#endif
		;
		/* merge: .(goto)(0, 12, 20) */
		reached[3][12] = 1;
		;
		_m = 3; goto P999; /* 5 */
	case 15: // STATE 13 - env.pml:29 - [rst[1] = dst[1]] (0:65:9 - 1)
		IfNotBlocked
		reached[3][13] = 1;
		(trpt+1)->bup.ovals = grab_ints(9);
		(trpt+1)->bup.ovals[0] = ((int)now.rst[1]);
		now.rst[1] = ((int)now.dst[1]);
#ifdef VAR_RANGES
		logval("rst[1]", ((int)now.rst[1]));
#endif
		;
		/* merge: rtok[1] = dtok[1](65, 14, 65) */
		reached[3][14] = 1;
		(trpt+1)->bup.ovals[1] = ((int)now.rtok[1]);
		now.rtok[1] = ((int)now.dtok[1]);
#ifdef VAR_RANGES
		logval("rtok[1]", ((int)now.rtok[1]));
#endif
		;
		/* merge: rsc[1] = dsc[1](65, 15, 65) */
		reached[3][15] = 1;
		(trpt+1)->bup.ovals[2] = ((int)now.rsc[1]);
		now.rsc[1] = ((int)now.dsc[1]);
#ifdef VAR_RANGES
		logval("rsc[1]", ((int)now.rsc[1]));
#endif
		;
		/* merge: rfp[1] = dfp[1](65, 16, 65) */
		reached[3][16] = 1;
		(trpt+1)->bup.ovals[3] = ((int)now.rfp[1]);
		now.rfp[1] = ((int)now.dfp[1]);
#ifdef VAR_RANGES
		logval("rfp[1]", ((int)now.rfp[1]));
#endif
		;
		/* merge: rlap[1] = dlap[1](65, 17, 65) */
		reached[3][17] = 1;
		(trpt+1)->bup.ovals[4] = ((int)now.rlap[1]);
		now.rlap[1] = ((int)now.dlap[1]);
#ifdef VAR_RANGES
		logval("rlap[1]", ((int)now.rlap[1]));
#endif
		;
		/* merge: .(goto)(65, 21, 65) */
		reached[3][21] = 1;
		;
		/* merge: txa[0] = 0(65, 22, 65) */
		reached[3][22] = 1;
		(trpt+1)->bup.ovals[5] = ((int)now.txa[0]);
		now.txa[0] = 0;
#ifdef VAR_RANGES
		logval("txa[0]", ((int)now.txa[0]));
#endif
		;
		/* merge: txa[1] = 0(65, 23, 65) */
		reached[3][23] = 1;
		(trpt+1)->bup.ovals[6] = ((int)now.txa[1]);
		now.txa[1] = 0;
#ifdef VAR_RANGES
		logval("txa[1]", ((int)now.txa[1]));
#endif
		;
		/* merge: lock[0] = 0(65, 24, 65) */
		reached[3][24] = 1;
		(trpt+1)->bup.ovals[7] = ((int)lock[0]);
		lock[0] = 0;
#ifdef VAR_RANGES
		logval("lock[0]", ((int)lock[0]));
#endif
		;
		/* merge: lock[1] = 0(65, 25, 65) */
		reached[3][25] = 1;
		(trpt+1)->bup.ovals[8] = ((int)lock[1]);
		lock[1] = 0;
#ifdef VAR_RANGES
		logval("lock[1]", ((int)lock[1]));
#endif
		;
		/* merge: .(goto)(0, 66, 65) */
		reached[3][66] = 1;
		;
		_m = 3; goto P999; /* 10 */
	case 16: // STATE 19 - env.pml:40 - [(1)] (65:0:4 - 1)
		IfNotBlocked
		reached[3][19] = 1;
		if (!(1))
			continue;
		/* merge: .(goto)(65, 21, 65) */
		reached[3][21] = 1;
		;
		/* merge: txa[0] = 0(65, 22, 65) */
		reached[3][22] = 1;
		(trpt+1)->bup.ovals = grab_ints(4);
		(trpt+1)->bup.ovals[0] = ((int)now.txa[0]);
		now.txa[0] = 0;
#ifdef VAR_RANGES
		logval("txa[0]", ((int)now.txa[0]));
#endif
		;
		/* merge: txa[1] = 0(65, 23, 65) */
		reached[3][23] = 1;
		(trpt+1)->bup.ovals[1] = ((int)now.txa[1]);
		now.txa[1] = 0;
#ifdef VAR_RANGES
		logval("txa[1]", ((int)now.txa[1]));
#endif
		;
		/* merge: lock[0] = 0(65, 24, 65) */
		reached[3][24] = 1;
		(trpt+1)->bup.ovals[2] = ((int)lock[0]);
		lock[0] = 0;
#ifdef VAR_RANGES
		logval("lock[0]", ((int)lock[0]));
#endif
		;
		/* merge: lock[1] = 0(65, 25, 65) */
		reached[3][25] = 1;
		(trpt+1)->bup.ovals[3] = ((int)lock[1]);
		lock[1] = 0;
#ifdef VAR_RANGES
		logval("lock[1]", ((int)lock[1]));
#endif
		;
		/* merge: .(goto)(0, 66, 65) */
		reached[3][66] = 1;
		;
		_m = 3; goto P999; /* 6 */
	case 17: // STATE 22 - env.pml:41 - [txa[0] = 0] (0:65:4 - 3)
		IfNotBlocked
		reached[3][22] = 1;
		(trpt+1)->bup.ovals = grab_ints(4);
		(trpt+1)->bup.ovals[0] = ((int)now.txa[0]);
		now.txa[0] = 0;
#ifdef VAR_RANGES
		logval("txa[0]", ((int)now.txa[0]));
#endif
		;
		/* merge: txa[1] = 0(65, 23, 65) */
		reached[3][23] = 1;
		(trpt+1)->bup.ovals[1] = ((int)now.txa[1]);
		now.txa[1] = 0;
#ifdef VAR_RANGES
		logval("txa[1]", ((int)now.txa[1]));
#endif
		;
		/* merge: lock[0] = 0(65, 24, 65) */
		reached[3][24] = 1;
		(trpt+1)->bup.ovals[2] = ((int)lock[0]);
		lock[0] = 0;
#ifdef VAR_RANGES
		logval("lock[0]", ((int)lock[0]));
#endif
		;
		/* merge: lock[1] = 0(65, 25, 65) */
		reached[3][25] = 1;
		(trpt+1)->bup.ovals[3] = ((int)lock[1]);
		lock[1] = 0;
#ifdef VAR_RANGES
		logval("lock[1]", ((int)lock[1]));
#endif
		;
		/* merge: .(goto)(0, 66, 65) */
		reached[3][66] = 1;
		;
		_m = 3; goto P999; /* 4 */
	case 18: // STATE 27 - env.pml:44 - [((((1&&((nf<3)&&!(calm)))&&(wsrc[0]!=0))&&!(kill[0])))] (65:0:2 - 1)
		IfNotBlocked
		reached[3][27] = 1;
		if (!((((1&&((((int)now.nf)<3)&& !(((int)now.calm))))&&(((int)now.wsrc[0])!=0))&& !(((int)now.kill[0])))))
			continue;
		/* merge: nf = (nf+1)(65, 28, 65) */
		reached[3][28] = 1;
		(trpt+1)->bup.ovals = grab_ints(2);
		(trpt+1)->bup.ovals[0] = ((int)now.nf);
		now.nf = (((int)now.nf)+1);
#ifdef VAR_RANGES
		logval("nf", ((int)now.nf));
#endif
		;
		/* merge: kill[0] = 1(65, 29, 65) */
		reached[3][29] = 1;
		(trpt+1)->bup.ovals[1] = ((int)now.kill[0]);
		now.kill[0] = 1;
#ifdef VAR_RANGES
		logval("kill[0]", ((int)now.kill[0]));
#endif
		;
		/* merge: .(goto)(0, 66, 65) */
		reached[3][66] = 1;
		;
		_m = 3; goto P999; /* 3 */
	case 19: // STATE 31 - env.pml:45 - [((((1&&((nf<3)&&!(calm)))&&(wsrc[1]!=0))&&!(kill[1])))] (65:0:2 - 1)
		IfNotBlocked
		reached[3][31] = 1;
		if (!((((1&&((((int)now.nf)<3)&& !(((int)now.calm))))&&(((int)now.wsrc[1])!=0))&& !(((int)now.kill[1])))))
			continue;
		/* merge: nf = (nf+1)(65, 32, 65) */
		reached[3][32] = 1;
		(trpt+1)->bup.ovals = grab_ints(2);
		(trpt+1)->bup.ovals[0] = ((int)now.nf);
		now.nf = (((int)now.nf)+1);
#ifdef VAR_RANGES
		logval("nf", ((int)now.nf));
#endif
		;
		/* merge: kill[1] = 1(65, 33, 65) */
		reached[3][33] = 1;
		(trpt+1)->bup.ovals[1] = ((int)now.kill[1]);
		now.kill[1] = 1;
#ifdef VAR_RANGES
		logval("kill[1]", ((int)now.kill[1]));
#endif
		;
		/* merge: .(goto)(0, 66, 65) */
		reached[3][66] = 1;
		;
		_m = 3; goto P999; /* 3 */
	case 20: // STATE 35 - env.pml:48 - [((((rst[0]==1)&&!(rlap[0]))&&(!(((((wsrc[0]!=0)&&(wkey[0]==0))&&(wtok[0]==rtok[0]))||(((wsrc[1]!=0)&&(wkey[1]==0))&&(wtok[1]==rtok[0]))))||(1&&((nf<3)&&!(calm))))))] (0:0:0 - 1)
		IfNotBlocked
		reached[3][35] = 1;
		if (!((((((int)now.rst[0])==1)&& !(((int)now.rlap[0])))&&( !(((((((int)now.wsrc[0])!=0)&&(((int)now.wkey[0])==0))&&(((int)now.wtok[0])==((int)now.rtok[0])))||(((((int)now.wsrc[1])!=0)&&(((int)now.wkey[1])==0))&&(((int)now.wtok[1])==((int)now.rtok[0])))))||(1&&((((int)now.nf)<3)&& !(((int)now.calm))))))))
			continue;
		_m = 3; goto P999; /* 0 */
	case 21: // STATE 36 - env.pml:22 - [(((((wsrc[0]!=0)&&(wkey[0]==0))&&(wtok[0]==rtok[0]))||(((wsrc[1]!=0)&&(wkey[1]==0))&&(wtok[1]==rtok[0]))))] (65:0:2 - 1)
		IfNotBlocked
		reached[3][36] = 1;
		if (!(((((((int)now.wsrc[0])!=0)&&(((int)now.wkey[0])==0))&&(((int)now.wtok[0])==((int)now.rtok[0])))||(((((int)now.wsrc[1])!=0)&&(((int)now.wkey[1])==0))&&(((int)now.wtok[1])==((int)now.rtok[0]))))))
			continue;
		/* merge: nf = (nf+1)(65, 37, 65) */
		reached[3][37] = 1;
		(trpt+1)->bup.ovals = grab_ints(2);
		(trpt+1)->bup.ovals[0] = ((int)now.nf);
		now.nf = (((int)now.nf)+1);
#ifdef VAR_RANGES
		logval("nf", ((int)now.nf));
#endif
		;
		/* merge: printf('the lease of token %d lapses: its worker is paused\\n',rtok[0])(65, 38, 65) */
		reached[3][38] = 1;
		Printf("the lease of token %d lapses: its worker is paused\n", ((int)now.rtok[0]));
		/* merge: .(goto)(65, 42, 65) */
		reached[3][42] = 1;
		;
		/* merge: rlap[0] = 1(65, 43, 65) */
		reached[3][43] = 1;
		(trpt+1)->bup.ovals[1] = ((int)now.rlap[0]);
		now.rlap[0] = 1;
#ifdef VAR_RANGES
		logval("rlap[0]", ((int)now.rlap[0]));
#endif
		;
		/* merge: .(goto)(0, 66, 65) */
		reached[3][66] = 1;
		;
		_m = 3; goto P999; /* 5 */
	case 22: // STATE 42 - env.pml:25 - [.(goto)] (0:65:1 - 2)
		IfNotBlocked
		reached[3][42] = 1;
		;
		/* merge: rlap[0] = 1(65, 43, 65) */
		reached[3][43] = 1;
		(trpt+1)->bup.oval = ((int)now.rlap[0]);
		now.rlap[0] = 1;
#ifdef VAR_RANGES
		logval("rlap[0]", ((int)now.rlap[0]));
#endif
		;
		/* merge: .(goto)(0, 66, 65) */
		reached[3][66] = 1;
		;
		_m = 3; goto P999; /* 2 */
	case 23: // STATE 40 - env.pml:23 - [printf('the lease of token %d lapses: no live worker holds it\\n',rtok[0])] (0:65:1 - 1)
		IfNotBlocked
		reached[3][40] = 1;
		Printf("the lease of token %d lapses: no live worker holds it\n", ((int)now.rtok[0]));
		/* merge: .(goto)(65, 42, 65) */
		reached[3][42] = 1;
		;
		/* merge: rlap[0] = 1(65, 43, 65) */
		reached[3][43] = 1;
		(trpt+1)->bup.oval = ((int)now.rlap[0]);
		now.rlap[0] = 1;
#ifdef VAR_RANGES
		logval("rlap[0]", ((int)now.rlap[0]));
#endif
		;
		/* merge: .(goto)(0, 66, 65) */
		reached[3][66] = 1;
		;
		_m = 3; goto P999; /* 3 */
	case 24: // STATE 46 - env.pml:49 - [((((rst[1]==1)&&!(rlap[1]))&&(!(((((wsrc[0]!=0)&&(wkey[0]==1))&&(wtok[0]==rtok[1]))||(((wsrc[1]!=0)&&(wkey[1]==1))&&(wtok[1]==rtok[1]))))||(1&&((nf<3)&&!(calm))))))] (0:0:0 - 1)
		IfNotBlocked
		reached[3][46] = 1;
		if (!((((((int)now.rst[1])==1)&& !(((int)now.rlap[1])))&&( !(((((((int)now.wsrc[0])!=0)&&(((int)now.wkey[0])==1))&&(((int)now.wtok[0])==((int)now.rtok[1])))||(((((int)now.wsrc[1])!=0)&&(((int)now.wkey[1])==1))&&(((int)now.wtok[1])==((int)now.rtok[1])))))||(1&&((((int)now.nf)<3)&& !(((int)now.calm))))))))
			continue;
		_m = 3; goto P999; /* 0 */
	case 25: // STATE 47 - env.pml:22 - [(((((wsrc[0]!=0)&&(wkey[0]==1))&&(wtok[0]==rtok[1]))||(((wsrc[1]!=0)&&(wkey[1]==1))&&(wtok[1]==rtok[1]))))] (65:0:2 - 1)
		IfNotBlocked
		reached[3][47] = 1;
		if (!(((((((int)now.wsrc[0])!=0)&&(((int)now.wkey[0])==1))&&(((int)now.wtok[0])==((int)now.rtok[1])))||(((((int)now.wsrc[1])!=0)&&(((int)now.wkey[1])==1))&&(((int)now.wtok[1])==((int)now.rtok[1]))))))
			continue;
		/* merge: nf = (nf+1)(65, 48, 65) */
		reached[3][48] = 1;
		(trpt+1)->bup.ovals = grab_ints(2);
		(trpt+1)->bup.ovals[0] = ((int)now.nf);
		now.nf = (((int)now.nf)+1);
#ifdef VAR_RANGES
		logval("nf", ((int)now.nf));
#endif
		;
		/* merge: printf('the lease of token %d lapses: its worker is paused\\n',rtok[1])(65, 49, 65) */
		reached[3][49] = 1;
		Printf("the lease of token %d lapses: its worker is paused\n", ((int)now.rtok[1]));
		/* merge: .(goto)(65, 53, 65) */
		reached[3][53] = 1;
		;
		/* merge: rlap[1] = 1(65, 54, 65) */
		reached[3][54] = 1;
		(trpt+1)->bup.ovals[1] = ((int)now.rlap[1]);
		now.rlap[1] = 1;
#ifdef VAR_RANGES
		logval("rlap[1]", ((int)now.rlap[1]));
#endif
		;
		/* merge: .(goto)(0, 66, 65) */
		reached[3][66] = 1;
		;
		_m = 3; goto P999; /* 5 */
	case 26: // STATE 53 - env.pml:25 - [.(goto)] (0:65:1 - 2)
		IfNotBlocked
		reached[3][53] = 1;
		;
		/* merge: rlap[1] = 1(65, 54, 65) */
		reached[3][54] = 1;
		(trpt+1)->bup.oval = ((int)now.rlap[1]);
		now.rlap[1] = 1;
#ifdef VAR_RANGES
		logval("rlap[1]", ((int)now.rlap[1]));
#endif
		;
		/* merge: .(goto)(0, 66, 65) */
		reached[3][66] = 1;
		;
		_m = 3; goto P999; /* 2 */
	case 27: // STATE 51 - env.pml:23 - [printf('the lease of token %d lapses: no live worker holds it\\n',rtok[1])] (0:65:1 - 1)
		IfNotBlocked
		reached[3][51] = 1;
		Printf("the lease of token %d lapses: no live worker holds it\n", ((int)now.rtok[1]));
		/* merge: .(goto)(65, 53, 65) */
		reached[3][53] = 1;
		;
		/* merge: rlap[1] = 1(65, 54, 65) */
		reached[3][54] = 1;
		(trpt+1)->bup.oval = ((int)now.rlap[1]);
		now.rlap[1] = 1;
#ifdef VAR_RANGES
		logval("rlap[1]", ((int)now.rlap[1]));
#endif
		;
		/* merge: .(goto)(0, 66, 65) */
		reached[3][66] = 1;
		;
		_m = 3; goto P999; /* 3 */
	case 28: // STATE 57 - env.pml:54 - [(((1&&(phase==0))&&sent))] (65:0:1 - 1)
		IfNotBlocked
		reached[3][57] = 1;
		if (!(((1&&(((int)now.phase)==0))&&((int)now.sent))))
			continue;
		/* merge: phase = 1(65, 58, 65) */
		reached[3][58] = 1;
		(trpt+1)->bup.oval = ((int)now.phase);
		now.phase = 1;
#ifdef VAR_RANGES
		logval("phase", ((int)now.phase));
#endif
		;
		/* merge: printf('time: the key is near the end of its retention\\n')(65, 59, 65) */
		reached[3][59] = 1;
		Printf("time: the key is near the end of its retention\n");
		/* merge: .(goto)(0, 66, 65) */
		reached[3][66] = 1;
		;
		_m = 3; goto P999; /* 3 */
	case 29: // STATE 61 - env.pml:56 - [(((1&&(phase==1))&&((((cs!=1)&&!(toSrv??[_,0,_]))&&!(((wsrc[0]!=0)&&(wkey[0]==0))))&&!(((wsrc[1]!=0)&&(wkey[1]==0))))))] (65:0:1 - 1)
		IfNotBlocked
		reached[3][61] = 1;
		if (!(((1&&(((int)now.phase)==1))&&((((((int)now.cs)!=1)&& !(Q_has(now.toSrv, 0, 0, 1, 0, 0, 0, 0, 0)))&& !(((((int)now.wsrc[0])!=0)&&(((int)now.wkey[0])==0))))&& !(((((int)now.wsrc[1])!=0)&&(((int)now.wkey[1])==0)))))))
			continue;
		/* merge: phase = 2(65, 62, 65) */
		reached[3][62] = 1;
		(trpt+1)->bup.oval = ((int)now.phase);
		now.phase = 2;
#ifdef VAR_RANGES
		logval("phase", ((int)now.phase));
#endif
		;
		/* merge: printf('time: the key's retention is over: the server may forget it\\n')(65, 63, 65) */
		reached[3][63] = 1;
		Printf("time: the key's retention is over: the server may forget it\n");
		/* merge: .(goto)(0, 66, 65) */
		reached[3][66] = 1;
		;
		_m = 3; goto P999; /* 3 */
	case 30: // STATE 68 - env.pml:66 - [-end-] (0:0:0 - 1)
		IfNotBlocked
		reached[3][68] = 1;
		if (!delproc(1, II)) continue;
		_m = 3; goto P999; /* 0 */

		 /* PROC Worker */
	case 31: // STATE 1 - lease.pml:63 - [toSrv??src,s,fp
		// bad hop lease.pml:65 -- at 175, <unless> looking for 43 -- merge 0:0:0 ] (43:0:7 - 1)
		reached[2][1] = 1;
		if (q_len(now.toSrv) == 0) continue;

		XX=1;
		if (!(XX = Q_has(now.toSrv, 0, 0, 0, 0, 0, 0, 0, 0))) continue;
		(trpt+1)->bup.ovals = grab_ints(7);
		(trpt+1)->bup.ovals[0] = XX;
		(trpt+1)->bup.ovals[1] = ((int)((P2 *)_this)->src);
		(trpt+1)->bup.ovals[2] = ((int)((P2 *)_this)->s);
		(trpt+1)->bup.ovals[3] = ((int)((P2 *)_this)->fp);
		;
		((P2 *)_this)->src = qrecv(now.toSrv, XX-1, 0, 0);
#ifdef VAR_RANGES
		logval("Worker:src", ((int)((P2 *)_this)->src));
#endif
		;
		((P2 *)_this)->s = qrecv(now.toSrv, XX-1, 1, 0);
#ifdef VAR_RANGES
		logval("Worker:s", ((int)((P2 *)_this)->s));
#endif
		;
		((P2 *)_this)->fp = qrecv(now.toSrv, XX-1, 2, 1);
#ifdef VAR_RANGES
		logval("Worker:fp", ((int)((P2 *)_this)->fp));
#endif
		;
		
#ifdef HAS_CODE
		if (readtrail && gui) {
			char simtmp[32];
			sprintf(simvals, "%d?", now.toSrv);
		sprintf(simtmp, "%d", ((int)((P2 *)_this)->src)); strcat(simvals, simtmp);		strcat(simvals, ",");
		sprintf(simtmp, "%d", ((int)((P2 *)_this)->s)); strcat(simvals, simtmp);		strcat(simvals, ",");
		sprintf(simtmp, "%d", ((int)((P2 *)_this)->fp)); strcat(simvals, simtmp);		}
#endif
		;
		/* merge: wsrc[w] = (src+1)(43, 2, 43) */
		reached[2][2] = 1;
		(trpt+1)->bup.ovals[4] = ((int)now.wsrc[ Index(((int)((P2 *)_this)->w), 2) ]);
		now.wsrc[ Index(((P2 *)_this)->w, 2) ] = (((int)((P2 *)_this)->src)+1);
#ifdef VAR_RANGES
		logval("wsrc[Worker:w]", ((int)now.wsrc[ Index(((int)((P2 *)_this)->w), 2) ]));
#endif
		;
		/* merge: k = s(43, 3, 43) */
		reached[2][3] = 1;
		(trpt+1)->bup.ovals[5] = ((int)((P2 *)_this)->k);
		((P2 *)_this)->k = ((int)((P2 *)_this)->s);
#ifdef VAR_RANGES
		logval("Worker:k", ((int)((P2 *)_this)->k));
#endif
		;
		/* merge: wkey[w] = k(43, 4, 43) */
		reached[2][4] = 1;
		(trpt+1)->bup.ovals[6] = ((int)now.wkey[ Index(((int)((P2 *)_this)->w), 2) ]);
		now.wkey[ Index(((P2 *)_this)->w, 2) ] = ((int)((P2 *)_this)->k);
#ifdef VAR_RANGES
		logval("wkey[Worker:w]", ((int)now.wkey[ Index(((int)((P2 *)_this)->w), 2) ]));
#endif
		;
		/* merge: printf('worker %d: receives a request for scope %d, fingerprint %d\\n',w,s,fp)(43, 5, 43) */
		reached[2][5] = 1;
		Printf("worker %d: receives a request for scope %d, fingerprint %d\n", ((int)((P2 *)_this)->w), ((int)((P2 *)_this)->s), ((int)((P2 *)_this)->fp));
		/* stop at bad hop 175, 43 */
		_m = 4; goto P999; /* 4 */
	case 32: // STATE 7 - lease.pml:79 - [((((rst[k]==0)||(((rst[k]==2)&&(rsc[k]==0))&&(phase==2)))||(((rst[k]==1)&&rlap[k])&&(rfp[k]==fp))))] (0:0:0 - 1)
		IfNotBlocked
		reached[2][7] = 1;
		if (!((((((int)now.rst[ Index(((int)((P2 *)_this)->k), 2) ])==0)||(((((int)now.rst[ Index(((int)((P2 *)_this)->k), 2) ])==2)&&(((int)now.rsc[ Index(((int)((P2 *)_this)->k), 2) ])==0))&&(((int)now.phase)==2)))||(((((int)now.rst[ Index(((int)((P2 *)_this)->k), 2) ])==1)&&((int)now.rlap[ Index(((int)((P2 *)_this)->k), 2) ]))&&(((int)now.rfp[ Index(((int)((P2 *)_this)->k), 2) ])==((int)((P2 *)_this)->fp))))))
			continue;
		_m = 3; goto P999; /* 0 */
	case 33: // STATE 156 - lease.pml:165 - [(kill[w])] (0:0:0 - 107)
		IfNotBlocked
		reached[2][156] = 1;
		if (!(((int)now.kill[ Index(((int)((P2 *)_this)->w), 2) ])))
			continue;
		_m = 3; goto P999; /* 0 */
	case 34: // STATE 157 - lease.pml:165 - [printf('worker %d: crashes\\n',w)] (0:177:16 - 1)
		IfNotBlocked
		reached[2][157] = 1;
		Printf("worker %d: crashes\n", ((int)((P2 *)_this)->w));
		/* merge: kill[w] = 0(177, 158, 177) */
		reached[2][158] = 1;
		(trpt+1)->bup.ovals = grab_ints(16);
		(trpt+1)->bup.ovals[0] = ((int)now.kill[ Index(((int)((P2 *)_this)->w), 2) ]);
		now.kill[ Index(((P2 *)_this)->w, 2) ] = 0;
#ifdef VAR_RANGES
		logval("kill[Worker:w]", ((int)now.kill[ Index(((int)((P2 *)_this)->w), 2) ]));
#endif
		;
		/* merge: wsrc[w] = 0(177, 159, 177) */
		reached[2][159] = 1;
		(trpt+1)->bup.ovals[1] = ((int)now.wsrc[ Index(((int)((P2 *)_this)->w), 2) ]);
		now.wsrc[ Index(((P2 *)_this)->w, 2) ] = 0;
#ifdef VAR_RANGES
		logval("wsrc[Worker:w]", ((int)now.wsrc[ Index(((int)((P2 *)_this)->w), 2) ]));
#endif
		;
		/* merge: wkey[w] = 0(177, 160, 177) */
		reached[2][160] = 1;
		(trpt+1)->bup.ovals[2] = ((int)now.wkey[ Index(((int)((P2 *)_this)->w), 2) ]);
		now.wkey[ Index(((P2 *)_this)->w, 2) ] = 0;
#ifdef VAR_RANGES
		logval("wkey[Worker:w]", ((int)now.wkey[ Index(((int)((P2 *)_this)->w), 2) ]));
#endif
		;
		/* merge: wtok[w] = 0(177, 161, 177) */
		reached[2][161] = 1;
		(trpt+1)->bup.ovals[3] = ((int)now.wtok[ Index(((int)((P2 *)_this)->w), 2) ]);
		now.wtok[ Index(((P2 *)_this)->w, 2) ] = 0;
#ifdef VAR_RANGES
		logval("wtok[Worker:w]", ((int)now.wtok[ Index(((int)((P2 *)_this)->w), 2) ]));
#endif
		;
		/* merge: txa[w] = 0(177, 162, 177) */
		reached[2][162] = 1;
		(trpt+1)->bup.ovals[4] = ((int)now.txa[ Index(((int)((P2 *)_this)->w), 2) ]);
		now.txa[ Index(((P2 *)_this)->w, 2) ] = 0;
#ifdef VAR_RANGES
		logval("txa[Worker:w]", ((int)now.txa[ Index(((int)((P2 *)_this)->w), 2) ]));
#endif
		;
		/* merge: src = 0(177, 163, 177) */
		reached[2][163] = 1;
		(trpt+1)->bup.ovals[5] = ((int)((P2 *)_this)->src);
		((P2 *)_this)->src = 0;
#ifdef VAR_RANGES
		logval("Worker:src", ((int)((P2 *)_this)->src));
#endif
		;
		/* merge: s = 0(177, 164, 177) */
		reached[2][164] = 1;
		(trpt+1)->bup.ovals[6] = ((int)((P2 *)_this)->s);
		((P2 *)_this)->s = 0;
#ifdef VAR_RANGES
		logval("Worker:s", ((int)((P2 *)_this)->s));
#endif
		;
		/* merge: k = 0(177, 165, 177) */
		reached[2][165] = 1;
		(trpt+1)->bup.ovals[7] = ((int)((P2 *)_this)->k);
		((P2 *)_this)->k = 0;
#ifdef VAR_RANGES
		logval("Worker:k", ((int)((P2 *)_this)->k));
#endif
		;
		/* merge: t = 0(177, 166, 177) */
		reached[2][166] = 1;
		(trpt+1)->bup.ovals[8] = ((int)((P2 *)_this)->t);
		((P2 *)_this)->t = 0;
#ifdef VAR_RANGES
		logval("Worker:t", ((int)((P2 *)_this)->t));
#endif
		;
		/* merge: c = 0(177, 167, 177) */
		reached[2][167] = 1;
		(trpt+1)->bup.ovals[9] = ((int)((P2 *)_this)->c);
		((P2 *)_this)->c = 0;
#ifdef VAR_RANGES
		logval("Worker:c", ((int)((P2 *)_this)->c));
#endif
		;
		/* merge: sc = 0(177, 168, 177) */
		reached[2][168] = 1;
		(trpt+1)->bup.ovals[10] = ((int)((P2 *)_this)->sc);
		((P2 *)_this)->sc = 0;
#ifdef VAR_RANGES
		logval("Worker:sc", ((int)((P2 *)_this)->sc));
#endif
		;
		/* merge: e = 0(177, 169, 177) */
		reached[2][169] = 1;
		(trpt+1)->bup.ovals[11] = ((int)((P2 *)_this)->e);
		((P2 *)_this)->e = 0;
#ifdef VAR_RANGES
		logval("Worker:e", ((int)((P2 *)_this)->e));
#endif
		;
		/* merge: fp = 0(177, 170, 177) */
		reached[2][170] = 1;
		(trpt+1)->bup.ovals[12] = ((int)((P2 *)_this)->fp);
		((P2 *)_this)->fp = 0;
#ifdef VAR_RANGES
		logval("Worker:fp", ((int)((P2 *)_this)->fp));
#endif
		;
		/* merge: rf = 0(177, 171, 177) */
		reached[2][171] = 1;
		(trpt+1)->bup.ovals[13] = ((int)((P2 *)_this)->rf);
		((P2 *)_this)->rf = 0;
#ifdef VAR_RANGES
		logval("Worker:rf", ((int)((P2 *)_this)->rf));
#endif
		;
		/* merge: lost = 0(177, 172, 177) */
		reached[2][172] = 1;
		(trpt+1)->bup.ovals[14] = ((int)((P2 *)_this)->lost);
		((P2 *)_this)->lost = 0;
#ifdef VAR_RANGES
		logval("Worker:lost", ((int)((P2 *)_this)->lost));
#endif
		;
		/* merge: acq = 0(177, 173, 177) */
		reached[2][173] = 1;
		(trpt+1)->bup.ovals[15] = ((int)((P2 *)_this)->acq);
		((P2 *)_this)->acq = 0;
#ifdef VAR_RANGES
		logval("Worker:acq", ((int)((P2 *)_this)->acq));
#endif
		;
		/* merge: .(goto)(0, 176, 177) */
		reached[2][176] = 1;
		;
		/* merge: .(goto)(0, 178, 177) */
		reached[2][178] = 1;
		;
		_m = 3; goto P999; /* 18 */
	case 35: // STATE 8 - lease.pml:43 - [assert(!((((((wtok[(1-w)]!=0)&&(wkey[(1-w)]==k))&&(rst[k]==1))&&(rtok[k]==wtok[(1-w)]))&&!(rlap[k]))))] (0:0:0 - 1)
		IfNotBlocked
		reached[2][8] = 1;
		spin_assert( !((((((((int)now.wtok[ Index((1-((int)((P2 *)_this)->w)), 2) ])!=0)&&(((int)now.wkey[ Index((1-((int)((P2 *)_this)->w)), 2) ])==((int)((P2 *)_this)->k)))&&(((int)now.rst[ Index(((int)((P2 *)_this)->k), 2) ])==1))&&(((int)now.rtok[ Index(((int)((P2 *)_this)->k), 2) ])==((int)now.wtok[ Index((1-((int)((P2 *)_this)->w)), 2) ])))&& !(((int)now.rlap[ Index(((int)((P2 *)_this)->k), 2) ])))), " !((((((wtok[(1-w)]!=0)&&(wkey[(1-w)]==k))&&(rst[k]==1))&&(rtok[k]==wtok[(1-w)]))&& !(rlap[k])))", II, tt, t);
		_m = 3; goto P999; /* 0 */
	case 36: // STATE 9 - lease.pml:45 - [ntok = (ntok+1)] (0:0:1 - 1)
		IfNotBlocked
		reached[2][9] = 1;
		(trpt+1)->bup.oval = ((int)now.ntok);
		now.ntok = (((int)now.ntok)+1);
#ifdef VAR_RANGES
		logval("ntok", ((int)now.ntok));
#endif
		;
		_m = 3; goto P999; /* 0 */
	case 37: // STATE 10 - lease.pml:45 - [t = ntok] (0:0:1 - 1)
		IfNotBlocked
		reached[2][10] = 1;
		(trpt+1)->bup.oval = ((int)((P2 *)_this)->t);
		((P2 *)_this)->t = ((int)now.ntok);
#ifdef VAR_RANGES
		logval("Worker:t", ((int)((P2 *)_this)->t));
#endif
		;
		_m = 3; goto P999; /* 0 */
	case 38: // STATE 11 - lease.pml:45 - [wtok[w] = t] (0:0:1 - 1)
		IfNotBlocked
		reached[2][11] = 1;
		(trpt+1)->bup.oval = ((int)now.wtok[ Index(((int)((P2 *)_this)->w), 2) ]);
		now.wtok[ Index(((P2 *)_this)->w, 2) ] = ((int)((P2 *)_this)->t);
#ifdef VAR_RANGES
		logval("wtok[Worker:w]", ((int)now.wtok[ Index(((int)((P2 *)_this)->w), 2) ]));
#endif
		;
		_m = 3; goto P999; /* 0 */
	case 39: // STATE 12 - lease.pml:47 - [((rst[k]==1))] (0:0:0 - 1)
		IfNotBlocked
		reached[2][12] = 1;
		if (!((((int)now.rst[ Index(((int)((P2 *)_this)->k), 2) ])==1)))
			continue;
		_m = 3; goto P999; /* 0 */
	case 40: // STATE 13 - lease.pml:47 - [printf('worker %d: takes the key over from token %d (its lease lapsed): token %d\\n',w,rtok[k],t)] (0:0:0 - 1)
		IfNotBlocked
		reached[2][13] = 1;
		Printf("worker %d: takes the key over from token %d (its lease lapsed): token %d\n", ((int)((P2 *)_this)->w), ((int)now.rtok[ Index(((int)((P2 *)_this)->k), 2) ]), ((int)((P2 *)_this)->t));
		_m = 3; goto P999; /* 0 */
	case 41: // STATE 15 - lease.pml:48 - [printf('worker %d: claims the key: token %d\\n',w,t)] (0:0:0 - 1)
		IfNotBlocked
		reached[2][15] = 1;
		Printf("worker %d: claims the key: token %d\n", ((int)((P2 *)_this)->w), ((int)((P2 *)_this)->t));
		_m = 3; goto P999; /* 0 */
	case 42: // STATE 18 - lease.pml:50 - [rst[k] = 1] (0:0:1 - 3)
		IfNotBlocked
		reached[2][18] = 1;
		(trpt+1)->bup.oval = ((int)now.rst[ Index(((int)((P2 *)_this)->k), 2) ]);
		now.rst[ Index(((P2 *)_this)->k, 2) ] = 1;
#ifdef VAR_RANGES
		logval("rst[Worker:k]", ((int)now.rst[ Index(((int)((P2 *)_this)->k), 2) ]));
#endif
		;
		_m = 3; goto P999; /* 0 */
	case 43: // STATE 19 - lease.pml:50 - [rtok[k] = t] (0:0:1 - 1)
		IfNotBlocked
		reached[2][19] = 1;
		(trpt+1)->bup.oval = ((int)now.rtok[ Index(((int)((P2 *)_this)->k), 2) ]);
		now.rtok[ Index(((P2 *)_this)->k, 2) ] = ((int)((P2 *)_this)->t);
#ifdef VAR_RANGES
		logval("rtok[Worker:k]", ((int)now.rtok[ Index(((int)((P2 *)_this)->k), 2) ]));
#endif
		;
		_m = 3; goto P999; /* 0 */
	case 44: // STATE 20 - lease.pml:50 - [rsc[k] = s] (0:0:1 - 1)
		IfNotBlocked
		reached[2][20] = 1;
		(trpt+1)->bup.oval = ((int)now.rsc[ Index(((int)((P2 *)_this)->k), 2) ]);
		now.rsc[ Index(((P2 *)_this)->k, 2) ] = ((int)((P2 *)_this)->s);
#ifdef VAR_RANGES
		logval("rsc[Worker:k]", ((int)now.rsc[ Index(((int)((P2 *)_this)->k), 2) ]));
#endif
		;
		_m = 3; goto P999; /* 0 */
	case 45: // STATE 21 - lease.pml:50 - [rfp[k] = fp] (0:0:1 - 1)
		IfNotBlocked
		reached[2][21] = 1;
		(trpt+1)->bup.oval = ((int)now.rfp[ Index(((int)((P2 *)_this)->k), 2) ]);
		now.rfp[ Index(((P2 *)_this)->k, 2) ] = ((int)((P2 *)_this)->fp);
#ifdef VAR_RANGES
		logval("rfp[Worker:k]", ((int)now.rfp[ Index(((int)((P2 *)_this)->k), 2) ]));
#endif
		;
		_m = 3; goto P999; /* 0 */
	case 46: // STATE 22 - lease.pml:50 - [rlap[k] = 0] (0:0:1 - 1)
		IfNotBlocked
		reached[2][22] = 1;
		(trpt+1)->bup.oval = ((int)now.rlap[ Index(((int)((P2 *)_this)->k), 2) ]);
		now.rlap[ Index(((P2 *)_this)->k, 2) ] = 0;
#ifdef VAR_RANGES
		logval("rlap[Worker:k]", ((int)now.rlap[ Index(((int)((P2 *)_this)->k), 2) ]));
#endif
		;
		_m = 3; goto P999; /* 0 */
	case 47: // STATE 25 - lease.pml:55 - [c = ( ((rfp[k]!=fp)) -> (4) : (( ((rst[k]==2)) -> (2) : (3) )) )] (0:0:1 - 1)
		IfNotBlocked
		reached[2][25] = 1;
		(trpt+1)->bup.oval = ((int)((P2 *)_this)->c);
		((P2 *)_this)->c = ( ((((int)now.rfp[ Index(((int)((P2 *)_this)->k), 2) ])!=((int)((P2 *)_this)->fp))) ? (4) : (( ((((int)now.rst[ Index(((int)((P2 *)_this)->k), 2) ])==2)) ? (2) : (3) )) );
#ifdef VAR_RANGES
		logval("Worker:c", ((int)((P2 *)_this)->c));
#endif
		;
		_m = 3; goto P999; /* 0 */
	case 48: // STATE 26 - lease.pml:55 - [sc = rsc[k]] (0:0:1 - 1)
		IfNotBlocked
		reached[2][26] = 1;
		(trpt+1)->bup.oval = ((int)((P2 *)_this)->sc);
		((P2 *)_this)->sc = ((int)now.rsc[ Index(((int)((P2 *)_this)->k), 2) ]);
#ifdef VAR_RANGES
		logval("Worker:sc", ((int)((P2 *)_this)->sc));
#endif
		;
		_m = 3; goto P999; /* 0 */
	case 49: // STATE 27 - lease.pml:55 - [rf = rfp[k]] (0:0:1 - 1)
		IfNotBlocked
		reached[2][27] = 1;
		(trpt+1)->bup.oval = ((int)((P2 *)_this)->rf);
		((P2 *)_this)->rf = ((int)now.rfp[ Index(((int)((P2 *)_this)->k), 2) ]);
#ifdef VAR_RANGES
		logval("Worker:rf", ((int)((P2 *)_this)->rf));
#endif
		;
		_m = 3; goto P999; /* 0 */
	case 50: // STATE 28 - lease.pml:55 - [e = rtok[k]] (0:0:1 - 1)
		IfNotBlocked
		reached[2][28] = 1;
		(trpt+1)->bup.oval = ((int)((P2 *)_this)->e);
		((P2 *)_this)->e = ((int)now.rtok[ Index(((int)((P2 *)_this)->k), 2) ]);
#ifdef VAR_RANGES
		logval("Worker:e", ((int)((P2 *)_this)->e));
#endif
		;
		_m = 3; goto P999; /* 0 */
	case 51: // STATE 33 - lease.pml:84 - [(((t==0)&&(c==3)))] (0:0:0 - 1)
		IfNotBlocked
		reached[2][33] = 1;
		if (!(((((int)((P2 *)_this)->t)==0)&&(((int)((P2 *)_this)->c)==3))))
			continue;
		_m = 3; goto P999; /* 0 */
	case 52: // STATE 35 - lease.pml:87 - [(((rst[k]!=1)||(rtok[k]!=e)))] (0:0:0 - 1)
		IfNotBlocked
		reached[2][35] = 1;
		if (!(((((int)now.rst[ Index(((int)((P2 *)_this)->k), 2) ])!=1)||(((int)now.rtok[ Index(((int)((P2 *)_this)->k), 2) ])!=((int)((P2 *)_this)->e)))))
			continue;
		_m = 3; goto P999; /* 0 */
	case 53: // STATE 36 - lease.pml:87 - [c = 0] (0:0:1 - 1)
		IfNotBlocked
		reached[2][36] = 1;
		(trpt+1)->bup.oval = ((int)((P2 *)_this)->c);
		((P2 *)_this)->c = 0;
#ifdef VAR_RANGES
		logval("Worker:c", ((int)((P2 *)_this)->c));
#endif
		;
		_m = 3; goto P999; /* 0 */
	case 54: // STATE 46 - lease.pml:94 - [((t!=0))] (0:0:0 - 1)
		IfNotBlocked
		reached[2][46] = 1;
		if (!((((int)((P2 *)_this)->t)!=0)))
			continue;
		_m = 3; goto P999; /* 0 */
	case 55: // STATE 47 - lease.pml:96 - [txa[w] = 1] (0:0:1 - 1)
		IfNotBlocked
		reached[2][47] = 1;
		(trpt+1)->bup.oval = ((int)now.txa[ Index(((int)((P2 *)_this)->w), 2) ]);
		now.txa[ Index(((P2 *)_this)->w, 2) ] = 1;
#ifdef VAR_RANGES
		logval("txa[Worker:w]", ((int)now.txa[ Index(((int)((P2 *)_this)->w), 2) ]));
#endif
		;
		_m = 3; goto P999; /* 0 */
	case 56: // STATE 49 - lease.pml:113 - [(((rst[k]==1)&&(rtok[k]==t)))] (0:0:0 - 1)
		IfNotBlocked
		reached[2][49] = 1;
		if (!(((((int)now.rst[ Index(((int)((P2 *)_this)->k), 2) ])==1)&&(((int)now.rtok[ Index(((int)((P2 *)_this)->k), 2) ])==((int)((P2 *)_this)->t)))))
			continue;
		_m = 3; goto P999; /* 0 */
	case 57: // STATE 50 - lease.pml:113 - [rlap[k] = 0] (0:0:1 - 1)
		IfNotBlocked
		reached[2][50] = 1;
		(trpt+1)->bup.oval = ((int)now.rlap[ Index(((int)((P2 *)_this)->k), 2) ]);
		now.rlap[ Index(((P2 *)_this)->k, 2) ] = 0;
#ifdef VAR_RANGES
		logval("rlap[Worker:k]", ((int)now.rlap[ Index(((int)((P2 *)_this)->k), 2) ]));
#endif
		;
		_m = 3; goto P999; /* 0 */
	case 58: // STATE 51 - lease.pml:114 - [printf('worker %d: renews its lease\\n',w)] (0:0:0 - 1)
		IfNotBlocked
		reached[2][51] = 1;
		Printf("worker %d: renews its lease\n", ((int)((P2 *)_this)->w));
		_m = 3; goto P999; /* 0 */
	case 59: // STATE 53 - lease.pml:115 - [lost = 1] (0:0:1 - 1)
		IfNotBlocked
		reached[2][53] = 1;
		(trpt+1)->bup.oval = ((int)((P2 *)_this)->lost);
		((P2 *)_this)->lost = 1;
#ifdef VAR_RANGES
		logval("Worker:lost", ((int)((P2 *)_this)->lost));
#endif
		;
		_m = 3; goto P999; /* 0 */
	case 60: // STATE 54 - lease.pml:116 - [printf('worker %d: renewal finds the key taken: the work is cancelled\\n',w)] (0:0:0 - 1)
		IfNotBlocked
		reached[2][54] = 1;
		Printf("worker %d: renewal finds the key taken: the work is cancelled\n", ((int)((P2 *)_this)->w));
		_m = 3; goto P999; /* 0 */
	case 61: // STATE 60 - lease.pml:123 - [(lost)] (0:0:1 - 1)
		IfNotBlocked
		reached[2][60] = 1;
		if (!(((int)((P2 *)_this)->lost)))
			continue;
		if (TstOnly) return 1; /* TT */
		/* dead 1: lost */  (trpt+1)->bup.oval = ((P2 *)_this)->lost;
#ifdef HAS_CODE
		if (!readtrail)
#endif
			((P2 *)_this)->lost = 0;
		_m = 3; goto P999; /* 0 */
	case 62: // STATE 61 - lease.pml:123 - [c = 3] (0:0:1 - 1)
		IfNotBlocked
		reached[2][61] = 1;
		(trpt+1)->bup.oval = ((int)((P2 *)_this)->c);
		((P2 *)_this)->c = 3;
#ifdef VAR_RANGES
		logval("Worker:c", ((int)((P2 *)_this)->c));
#endif
		;
		_m = 3; goto P999; /* 0 */
	case 63: // STATE 62 - lease.pml:125 - [((!(lost)&&!(txa[w])))] (0:0:1 - 1)
		IfNotBlocked
		reached[2][62] = 1;
		if (!(( !(((int)((P2 *)_this)->lost))&& !(((int)now.txa[ Index(((int)((P2 *)_this)->w), 2) ])))))
			continue;
		if (TstOnly) return 1; /* TT */
		/* dead 1: lost */  (trpt+1)->bup.oval = ((P2 *)_this)->lost;
#ifdef HAS_CODE
		if (!readtrail)
#endif
			((P2 *)_this)->lost = 0;
		_m = 3; goto P999; /* 0 */
	case 64: // STATE 63 - lease.pml:125 - [c = 5] (0:0:1 - 1)
		IfNotBlocked
		reached[2][63] = 1;
		(trpt+1)->bup.oval = ((int)((P2 *)_this)->c);
		((P2 *)_this)->c = 5;
#ifdef VAR_RANGES
		logval("Worker:c", ((int)((P2 *)_this)->c));
#endif
		;
		_m = 3; goto P999; /* 0 */
	case 65: // STATE 64 - lease.pml:126 - [(((!(lost)&&txa[w])&&((rst[k]==1)&&(rtok[k]==t))))] (0:0:1 - 1)
		IfNotBlocked
		reached[2][64] = 1;
		if (!((( !(((int)((P2 *)_this)->lost))&&((int)now.txa[ Index(((int)((P2 *)_this)->w), 2) ]))&&((((int)now.rst[ Index(((int)((P2 *)_this)->k), 2) ])==1)&&(((int)now.rtok[ Index(((int)((P2 *)_this)->k), 2) ])==((int)((P2 *)_this)->t))))))
			continue;
		if (TstOnly) return 1; /* TT */
		/* dead 1: lost */  (trpt+1)->bup.oval = ((P2 *)_this)->lost;
#ifdef HAS_CODE
		if (!readtrail)
#endif
			((P2 *)_this)->lost = 0;
		_m = 3; goto P999; /* 0 */
	case 66: // STATE 65 - lease.pml:130 - [rst[k] = 2] (0:0:1 - 1)
		IfNotBlocked
		reached[2][65] = 1;
		(trpt+1)->bup.oval = ((int)now.rst[ Index(((int)((P2 *)_this)->k), 2) ]);
		now.rst[ Index(((P2 *)_this)->k, 2) ] = 2;
#ifdef VAR_RANGES
		logval("rst[Worker:k]", ((int)now.rst[ Index(((int)((P2 *)_this)->k), 2) ]));
#endif
		;
		_m = 3; goto P999; /* 0 */
	case 67: // STATE 66 - lease.pml:130 - [rtok[k] = t] (0:0:1 - 1)
		IfNotBlocked
		reached[2][66] = 1;
		(trpt+1)->bup.oval = ((int)now.rtok[ Index(((int)((P2 *)_this)->k), 2) ]);
		now.rtok[ Index(((P2 *)_this)->k, 2) ] = ((int)((P2 *)_this)->t);
#ifdef VAR_RANGES
		logval("rtok[Worker:k]", ((int)now.rtok[ Index(((int)((P2 *)_this)->k), 2) ]));
#endif
		;
		_m = 3; goto P999; /* 0 */
	case 68: // STATE 67 - lease.pml:130 - [rlap[k] = 0] (0:0:1 - 1)
		IfNotBlocked
		reached[2][67] = 1;
		(trpt+1)->bup.oval = ((int)now.rlap[ Index(((int)((P2 *)_this)->k), 2) ]);
		now.rlap[ Index(((P2 *)_this)->k, 2) ] = 0;
#ifdef VAR_RANGES
		logval("rlap[Worker:k]", ((int)now.rlap[ Index(((int)((P2 *)_this)->k), 2) ]));
#endif
		;
		_m = 3; goto P999; /* 0 */
	case 69: // STATE 68 - lease.pml:131 - [assert((commits[k]==0))] (0:0:0 - 1)
		IfNotBlocked
		reached[2][68] = 1;
		spin_assert((((int)now.commits[ Index(((int)((P2 *)_this)->k), 2) ])==0), "(commits[k]==0)", II, tt, t);
		_m = 3; goto P999; /* 0 */
	case 70: // STATE 69 - lease.pml:131 - [commits[k] = (commits[k]+1)] (0:0:1 - 1)
		IfNotBlocked
		reached[2][69] = 1;
		(trpt+1)->bup.oval = ((int)now.commits[ Index(((int)((P2 *)_this)->k), 2) ]);
		now.commits[ Index(((P2 *)_this)->k, 2) ] = (((int)now.commits[ Index(((int)((P2 *)_this)->k), 2) ])+1);
#ifdef VAR_RANGES
		logval("commits[Worker:k]", ((int)now.commits[ Index(((int)((P2 *)_this)->k), 2) ]));
#endif
		;
		_m = 3; goto P999; /* 0 */
	case 71: // STATE 70 - lease.pml:131 - [committed[k] = t] (0:0:1 - 1)
		IfNotBlocked
		reached[2][70] = 1;
		(trpt+1)->bup.oval = ((int)now.committed[ Index(((int)((P2 *)_this)->k), 2) ]);
		now.committed[ Index(((P2 *)_this)->k, 2) ] = ((int)((P2 *)_this)->t);
#ifdef VAR_RANGES
		logval("committed[Worker:k]", ((int)now.committed[ Index(((int)((P2 *)_this)->k), 2) ]));
#endif
		;
		_m = 3; goto P999; /* 0 */
	case 72: // STATE 71 - lease.pml:131 - [dst[0] = rst[0]] (0:0:1 - 1)
		IfNotBlocked
		reached[2][71] = 1;
		(trpt+1)->bup.oval = ((int)now.dst[0]);
		now.dst[0] = ((int)now.rst[0]);
#ifdef VAR_RANGES
		logval("dst[0]", ((int)now.dst[0]));
#endif
		;
		_m = 3; goto P999; /* 0 */
	case 73: // STATE 72 - lease.pml:131 - [dtok[0] = rtok[0]] (0:0:1 - 1)
		IfNotBlocked
		reached[2][72] = 1;
		(trpt+1)->bup.oval = ((int)now.dtok[0]);
		now.dtok[0] = ((int)now.rtok[0]);
#ifdef VAR_RANGES
		logval("dtok[0]", ((int)now.dtok[0]));
#endif
		;
		_m = 3; goto P999; /* 0 */
	case 74: // STATE 73 - lease.pml:131 - [dsc[0] = rsc[0]] (0:0:1 - 1)
		IfNotBlocked
		reached[2][73] = 1;
		(trpt+1)->bup.oval = ((int)now.dsc[0]);
		now.dsc[0] = ((int)now.rsc[0]);
#ifdef VAR_RANGES
		logval("dsc[0]", ((int)now.dsc[0]));
#endif
		;
		_m = 3; goto P999; /* 0 */
	case 75: // STATE 74 - lease.pml:131 - [dfp[0] = rfp[0]] (0:0:1 - 1)
		IfNotBlocked
		reached[2][74] = 1;
		(trpt+1)->bup.oval = ((int)now.dfp[0]);
		now.dfp[0] = ((int)now.rfp[0]);
#ifdef VAR_RANGES
		logval("dfp[0]", ((int)now.dfp[0]));
#endif
		;
		_m = 3; goto P999; /* 0 */
	case 76: // STATE 75 - lease.pml:131 - [dlap[0] = rlap[0]] (0:0:1 - 1)
		IfNotBlocked
		reached[2][75] = 1;
		(trpt+1)->bup.oval = ((int)now.dlap[0]);
		now.dlap[0] = ((int)now.rlap[0]);
#ifdef VAR_RANGES
		logval("dlap[0]", ((int)now.dlap[0]));
#endif
		;
		_m = 3; goto P999; /* 0 */
	case 77: // STATE 76 - lease.pml:131 - [dst[1] = rst[1]] (0:0:1 - 1)
		IfNotBlocked
		reached[2][76] = 1;
		(trpt+1)->bup.oval = ((int)now.dst[1]);
		now.dst[1] = ((int)now.rst[1]);
#ifdef VAR_RANGES
		logval("dst[1]", ((int)now.dst[1]));
#endif
		;
		_m = 3; goto P999; /* 0 */
	case 78: // STATE 77 - lease.pml:131 - [dtok[1] = rtok[1]] (0:0:1 - 1)
		IfNotBlocked
		reached[2][77] = 1;
		(trpt+1)->bup.oval = ((int)now.dtok[1]);
		now.dtok[1] = ((int)now.rtok[1]);
#ifdef VAR_RANGES
		logval("dtok[1]", ((int)now.dtok[1]));
#endif
		;
		_m = 3; goto P999; /* 0 */
	case 79: // STATE 78 - lease.pml:131 - [dsc[1] = rsc[1]] (0:0:1 - 1)
		IfNotBlocked
		reached[2][78] = 1;
		(trpt+1)->bup.oval = ((int)now.dsc[1]);
		now.dsc[1] = ((int)now.rsc[1]);
#ifdef VAR_RANGES
		logval("dsc[1]", ((int)now.dsc[1]));
#endif
		;
		_m = 3; goto P999; /* 0 */
	case 80: // STATE 79 - lease.pml:131 - [dfp[1] = rfp[1]] (0:0:1 - 1)
		IfNotBlocked
		reached[2][79] = 1;
		(trpt+1)->bup.oval = ((int)now.dfp[1]);
		now.dfp[1] = ((int)now.rfp[1]);
#ifdef VAR_RANGES
		logval("dfp[1]", ((int)now.dfp[1]));
#endif
		;
		_m = 3; goto P999; /* 0 */
	case 81: // STATE 80 - lease.pml:131 - [dlap[1] = rlap[1]] (0:0:1 - 1)
		IfNotBlocked
		reached[2][80] = 1;
		(trpt+1)->bup.oval = ((int)now.dlap[1]);
		now.dlap[1] = ((int)now.rlap[1]);
#ifdef VAR_RANGES
		logval("dlap[1]", ((int)now.dlap[1]));
#endif
		;
		_m = 3; goto P999; /* 0 */
	case 82: // STATE 81 - lease.pml:132 - [c = 1] (0:0:1 - 1)
		IfNotBlocked
		reached[2][81] = 1;
		(trpt+1)->bup.oval = ((int)((P2 *)_this)->c);
		((P2 *)_this)->c = 1;
#ifdef VAR_RANGES
		logval("Worker:c", ((int)((P2 *)_this)->c));
#endif
		;
		_m = 3; goto P999; /* 0 */
	case 83: // STATE 82 - lease.pml:132 - [sc = s] (0:0:1 - 1)
		IfNotBlocked
		reached[2][82] = 1;
		(trpt+1)->bup.oval = ((int)((P2 *)_this)->sc);
		((P2 *)_this)->sc = ((int)((P2 *)_this)->s);
#ifdef VAR_RANGES
		logval("Worker:sc", ((int)((P2 *)_this)->sc));
#endif
		;
		_m = 3; goto P999; /* 0 */
	case 84: // STATE 83 - lease.pml:132 - [rf = fp] (0:0:1 - 1)
		IfNotBlocked
		reached[2][83] = 1;
		(trpt+1)->bup.oval = ((int)((P2 *)_this)->rf);
		((P2 *)_this)->rf = ((int)((P2 *)_this)->fp);
#ifdef VAR_RANGES
		logval("Worker:rf", ((int)((P2 *)_this)->rf));
#endif
		;
		_m = 3; goto P999; /* 0 */
	case 85: // STATE 84 - lease.pml:132 - [e = t] (0:0:1 - 1)
		IfNotBlocked
		reached[2][84] = 1;
		(trpt+1)->bup.oval = ((int)((P2 *)_this)->e);
		((P2 *)_this)->e = ((int)((P2 *)_this)->t);
#ifdef VAR_RANGES
		logval("Worker:e", ((int)((P2 *)_this)->e));
#endif
		;
		_m = 3; goto P999; /* 0 */
	case 86: // STATE 85 - lease.pml:133 - [printf('worker %d: commits the outcome of token %d\\n',w,t)] (0:0:0 - 1)
		IfNotBlocked
		reached[2][85] = 1;
		Printf("worker %d: commits the outcome of token %d\n", ((int)((P2 *)_this)->w), ((int)((P2 *)_this)->t));
		_m = 3; goto P999; /* 0 */
	case 87: // STATE 86 - lease.pml:135 - [(((!(lost)&&txa[w])&&!(((rst[k]==1)&&(rtok[k]==t)))))] (0:0:1 - 1)
		IfNotBlocked
		reached[2][86] = 1;
		if (!((( !(((int)((P2 *)_this)->lost))&&((int)now.txa[ Index(((int)((P2 *)_this)->w), 2) ]))&& !(((((int)now.rst[ Index(((int)((P2 *)_this)->k), 2) ])==1)&&(((int)now.rtok[ Index(((int)((P2 *)_this)->k), 2) ])==((int)((P2 *)_this)->t)))))))
			continue;
		if (TstOnly) return 1; /* TT */
		/* dead 1: lost */  (trpt+1)->bup.oval = ((P2 *)_this)->lost;
#ifdef HAS_CODE
		if (!readtrail)
#endif
			((P2 *)_this)->lost = 0;
		_m = 3; goto P999; /* 0 */
	case 88: // STATE 87 - lease.pml:135 - [c = 3] (0:0:1 - 1)
		IfNotBlocked
		reached[2][87] = 1;
		(trpt+1)->bup.oval = ((int)((P2 *)_this)->c);
		((P2 *)_this)->c = 3;
#ifdef VAR_RANGES
		logval("Worker:c", ((int)((P2 *)_this)->c));
#endif
		;
		_m = 3; goto P999; /* 0 */
	case 89: // STATE 90 - lease.pml:141 - [((c==3))] (0:0:0 - 1)
		IfNotBlocked
		reached[2][90] = 1;
		if (!((((int)((P2 *)_this)->c)==3)))
			continue;
		_m = 3; goto P999; /* 0 */
	case 90: // STATE 91 - lease.pml:141 - [printf('worker %d: the fence refuses token %d's outcome: not recorded\\n',w,t)] (0:0:0 - 1)
		IfNotBlocked
		reached[2][91] = 1;
		Printf("worker %d: the fence refuses token %d's outcome: not recorded\n", ((int)((P2 *)_this)->w), ((int)((P2 *)_this)->t));
		_m = 3; goto P999; /* 0 */
	case 91: // STATE 92 - lease.pml:142 - [((c==5))] (0:0:0 - 1)
		IfNotBlocked
		reached[2][92] = 1;
		if (!((((int)((P2 *)_this)->c)==5)))
			continue;
		_m = 3; goto P999; /* 0 */
	case 92: // STATE 93 - lease.pml:142 - [printf('worker %d: its transaction is gone: the work is undone\\n',w)] (0:0:0 - 1)
		IfNotBlocked
		reached[2][93] = 1;
		Printf("worker %d: its transaction is gone: the work is undone\n", ((int)((P2 *)_this)->w));
		_m = 3; goto P999; /* 0 */
	case 93: // STATE 97 - lease.pml:145 - [txa[w] = 0] (0:0:1 - 1)
		IfNotBlocked
		reached[2][97] = 1;
		(trpt+1)->bup.oval = ((int)now.txa[ Index(((int)((P2 *)_this)->w), 2) ]);
		now.txa[ Index(((P2 *)_this)->w, 2) ] = 0;
#ifdef VAR_RANGES
		logval("txa[Worker:w]", ((int)now.txa[ Index(((int)((P2 *)_this)->w), 2) ]));
#endif
		;
		_m = 3; goto P999; /* 0 */
	case 94: // STATE 99 - lease.pml:148 - [((c==5))] (0:0:0 - 1)
		IfNotBlocked
		reached[2][99] = 1;
		if (!((((int)((P2 *)_this)->c)==5)))
			continue;
		_m = 3; goto P999; /* 0 */
	case 95: // STATE 100 - lease.pml:150 - [(((rst[k]==1)&&(rtok[k]==t)))] (0:0:1 - 1)
		IfNotBlocked
		reached[2][100] = 1;
		if (!(((((int)now.rst[ Index(((int)((P2 *)_this)->k), 2) ])==1)&&(((int)now.rtok[ Index(((int)((P2 *)_this)->k), 2) ])==((int)((P2 *)_this)->t)))))
			continue;
		if (TstOnly) return 1; /* TT */
		/* dead 1: t */  (trpt+1)->bup.oval = ((P2 *)_this)->t;
#ifdef HAS_CODE
		if (!readtrail)
#endif
			((P2 *)_this)->t = 0;
		_m = 3; goto P999; /* 0 */
	case 96: // STATE 101 - lease.pml:151 - [rst[k] = 0] (0:0:1 - 1)
		IfNotBlocked
		reached[2][101] = 1;
		(trpt+1)->bup.oval = ((int)now.rst[ Index(((int)((P2 *)_this)->k), 2) ]);
		now.rst[ Index(((P2 *)_this)->k, 2) ] = 0;
#ifdef VAR_RANGES
		logval("rst[Worker:k]", ((int)now.rst[ Index(((int)((P2 *)_this)->k), 2) ]));
#endif
		;
		_m = 3; goto P999; /* 0 */
	case 97: // STATE 102 - lease.pml:151 - [rtok[k] = 0] (0:0:1 - 1)
		IfNotBlocked
		reached[2][102] = 1;
		(trpt+1)->bup.oval = ((int)now.rtok[ Index(((int)((P2 *)_this)->k), 2) ]);
		now.rtok[ Index(((P2 *)_this)->k, 2) ] = 0;
#ifdef VAR_RANGES
		logval("rtok[Worker:k]", ((int)now.rtok[ Index(((int)((P2 *)_this)->k), 2) ]));
#endif
		;
		_m = 3; goto P999; /* 0 */
	case 98: // STATE 103 - lease.pml:151 - [rsc[k] = 0] (0:0:1 - 1)
		IfNotBlocked
		reached[2][103] = 1;
		(trpt+1)->bup.oval = ((int)now.rsc[ Index(((int)((P2 *)_this)->k), 2) ]);
		now.rsc[ Index(((P2 *)_this)->k, 2) ] = 0;
#ifdef VAR_RANGES
		logval("rsc[Worker:k]", ((int)now.rsc[ Index(((int)((P2 *)_this)->k), 2) ]));
#endif
		;
		_m = 3; goto P999; /* 0 */
	case 99: // STATE 104 - lease.pml:151 - [rfp[k] = 0] (0:0:1 - 1)
		IfNotBlocked
		reached[2][104] = 1;
		(trpt+1)->bup.oval = ((int)now.rfp[ Index(((int)((P2 *)_this)->k), 2) ]);
		now.rfp[ Index(((P2 *)_this)->k, 2) ] = 0;
#ifdef VAR_RANGES
		logval("rfp[Worker:k]", ((int)now.rfp[ Index(((int)((P2 *)_this)->k), 2) ]));
#endif
		;
		_m = 3; goto P999; /* 0 */
	case 100: // STATE 105 - lease.pml:151 - [rlap[k] = 0] (0:0:1 - 1)
		IfNotBlocked
		reached[2][105] = 1;
		(trpt+1)->bup.oval = ((int)now.rlap[ Index(((int)((P2 *)_this)->k), 2) ]);
		now.rlap[ Index(((P2 *)_this)->k, 2) ] = 0;
#ifdef VAR_RANGES
		logval("rlap[Worker:k]", ((int)now.rlap[ Index(((int)((P2 *)_this)->k), 2) ]));
#endif
		;
		_m = 3; goto P999; /* 0 */
	case 101: // STATE 116 - network.pml:45 - [((c==1))] (0:0:0 - 1)
		IfNotBlocked
		reached[2][116] = 1;
		if (!((((int)((P2 *)_this)->c)==1)))
			continue;
		_m = 3; goto P999; /* 0 */
	case 102: // STATE 117 - network.pml:45 - [printf('worker %d: answers 200 (execution %d)\\n',w,e)] (0:0:0 - 1)
		IfNotBlocked
		reached[2][117] = 1;
		Printf("worker %d: answers 200 (execution %d)\n", ((int)((P2 *)_this)->w), ((int)((P2 *)_this)->e));
		_m = 3; goto P999; /* 0 */
	case 103: // STATE 118 - network.pml:46 - [((c==2))] (0:0:0 - 1)
		IfNotBlocked
		reached[2][118] = 1;
		if (!((((int)((P2 *)_this)->c)==2)))
			continue;
		_m = 3; goto P999; /* 0 */
	case 104: // STATE 119 - network.pml:46 - [printf('worker %d: answers 200 from the record, replayed (execution %d)\\n',w,e)] (0:0:0 - 1)
		IfNotBlocked
		reached[2][119] = 1;
		Printf("worker %d: answers 200 from the record, replayed (execution %d)\n", ((int)((P2 *)_this)->w), ((int)((P2 *)_this)->e));
		_m = 3; goto P999; /* 0 */
	case 105: // STATE 121 - network.pml:47 - [printf('worker %d: answers %d\\n',w,( (((c==1)||(c==2))) -> (200) : (( ((c==3)) -> (409) : (( ((c==4)) -> (422) : (( ((c==5)) -> (500) : (401) )) )) )) ))] (0:0:0 - 1)
		IfNotBlocked
		reached[2][121] = 1;
		Printf("worker %d: answers %d\n", ((int)((P2 *)_this)->w), ( (((((int)((P2 *)_this)->c)==1)||(((int)((P2 *)_this)->c)==2))) ? (200) : (( ((((int)((P2 *)_this)->c)==3)) ? (409) : (( ((((int)((P2 *)_this)->c)==4)) ? (422) : (( ((((int)((P2 *)_this)->c)==5)) ? (500) : (401) )) )) )) ));
		_m = 3; goto P999; /* 0 */
	case 106: // STATE 124 - network.pml:50 - [((src==1))] (0:0:1 - 1)
		IfNotBlocked
		reached[2][124] = 1;
		if (!((((int)((P2 *)_this)->src)==1)))
			continue;
		if (TstOnly) return 1; /* TT */
		/* dead 1: src */  (trpt+1)->bup.oval = ((P2 *)_this)->src;
#ifdef HAS_CODE
		if (!readtrail)
#endif
			((P2 *)_this)->src = 0;
		_m = 3; goto P999; /* 0 */
	case 107: // STATE 125 - network.pml:52 - [(nfull(toOther))] (0:0:0 - 1)
		IfNotBlocked
		reached[2][125] = 1;
		if (!((!q_full(now.toOther))))
			continue;
		_m = 3; goto P999; /* 0 */
	case 108: // STATE 126 - network.pml:52 - [toOther!c,sc,rf,e] (0:0:0 - 1)
		IfNotBlocked
		reached[2][126] = 1;
		if (q_full(now.toOther))
			continue;
#ifdef HAS_CODE
		if (readtrail && gui) {
			char simtmp[64];
			sprintf(simvals, "%d!", now.toOther);
		sprintf(simtmp, "%d", ((int)((P2 *)_this)->c)); strcat(simvals, simtmp);		strcat(simvals, ",");
		sprintf(simtmp, "%d", ((int)((P2 *)_this)->sc)); strcat(simvals, simtmp);		strcat(simvals, ",");
		sprintf(simtmp, "%d", ((int)((P2 *)_this)->rf)); strcat(simvals, simtmp);		strcat(simvals, ",");
		sprintf(simtmp, "%d", ((int)((P2 *)_this)->e)); strcat(simvals, simtmp);		}
#endif
		
		qsend(now.toOther, 0, ((int)((P2 *)_this)->c), ((int)((P2 *)_this)->sc), ((int)((P2 *)_this)->rf), ((int)((P2 *)_this)->e), 4);
		_m = 2; goto P999; /* 0 */
	case 109: // STATE 127 - network.pml:53 - [(full(toOther))] (0:0:0 - 1)
		IfNotBlocked
		reached[2][127] = 1;
		if (!(q_full(now.toOther)))
			continue;
		_m = 3; goto P999; /* 0 */
	case 110: // STATE 131 - network.pml:57 - [toCli!c,sc,rf,e] (0:0:0 - 1)
		IfNotBlocked
		reached[2][131] = 1;
		if (q_full(now.toCli))
			continue;
#ifdef HAS_CODE
		if (readtrail && gui) {
			char simtmp[64];
			sprintf(simvals, "%d!", now.toCli);
		sprintf(simtmp, "%d", ((int)((P2 *)_this)->c)); strcat(simvals, simtmp);		strcat(simvals, ",");
		sprintf(simtmp, "%d", ((int)((P2 *)_this)->sc)); strcat(simvals, simtmp);		strcat(simvals, ",");
		sprintf(simtmp, "%d", ((int)((P2 *)_this)->rf)); strcat(simvals, simtmp);		strcat(simvals, ",");
		sprintf(simtmp, "%d", ((int)((P2 *)_this)->e)); strcat(simvals, simtmp);		}
#endif
		
		qsend(now.toCli, 0, ((int)((P2 *)_this)->c), ((int)((P2 *)_this)->sc), ((int)((P2 *)_this)->rf), ((int)((P2 *)_this)->e), 4);
		_m = 2; goto P999; /* 0 */
	case 111: // STATE 132 - network.pml:58 - [((1&&((nf<3)&&!(calm))))] (0:0:0 - 1)
		IfNotBlocked
		reached[2][132] = 1;
		if (!((1&&((((int)now.nf)<3)&& !(((int)now.calm))))))
			continue;
		_m = 3; goto P999; /* 0 */
	case 112: // STATE 133 - network.pml:58 - [nf = (nf+1)] (0:0:1 - 1)
		IfNotBlocked
		reached[2][133] = 1;
		(trpt+1)->bup.oval = ((int)now.nf);
		now.nf = (((int)now.nf)+1);
#ifdef VAR_RANGES
		logval("nf", ((int)now.nf));
#endif
		;
		_m = 3; goto P999; /* 0 */
	case 113: // STATE 134 - network.pml:58 - [printf('network: loses the answer\\n')] (0:0:0 - 1)
		IfNotBlocked
		reached[2][134] = 1;
		Printf("network: loses the answer\n");
		_m = 3; goto P999; /* 0 */
	case 114: // STATE 140 - lease.pml:159 - [wsrc[w] = 0] (0:0:1 - 7)
		IfNotBlocked
		reached[2][140] = 1;
		(trpt+1)->bup.oval = ((int)now.wsrc[ Index(((int)((P2 *)_this)->w), 2) ]);
		now.wsrc[ Index(((P2 *)_this)->w, 2) ] = 0;
#ifdef VAR_RANGES
		logval("wsrc[Worker:w]", ((int)now.wsrc[ Index(((int)((P2 *)_this)->w), 2) ]));
#endif
		;
		_m = 3; goto P999; /* 0 */
	case 115: // STATE 141 - lease.pml:159 - [wkey[w] = 0] (0:0:1 - 1)
		IfNotBlocked
		reached[2][141] = 1;
		(trpt+1)->bup.oval = ((int)now.wkey[ Index(((int)((P2 *)_this)->w), 2) ]);
		now.wkey[ Index(((P2 *)_this)->w, 2) ] = 0;
#ifdef VAR_RANGES
		logval("wkey[Worker:w]", ((int)now.wkey[ Index(((int)((P2 *)_this)->w), 2) ]));
#endif
		;
		_m = 3; goto P999; /* 0 */
	case 116: // STATE 142 - lease.pml:159 - [wtok[w] = 0] (0:0:1 - 1)
		IfNotBlocked
		reached[2][142] = 1;
		(trpt+1)->bup.oval = ((int)now.wtok[ Index(((int)((P2 *)_this)->w), 2) ]);
		now.wtok[ Index(((P2 *)_this)->w, 2) ] = 0;
#ifdef VAR_RANGES
		logval("wtok[Worker:w]", ((int)now.wtok[ Index(((int)((P2 *)_this)->w), 2) ]));
#endif
		;
		_m = 3; goto P999; /* 0 */
	case 117: // STATE 143 - lease.pml:159 - [txa[w] = 0] (0:0:1 - 1)
		IfNotBlocked
		reached[2][143] = 1;
		(trpt+1)->bup.oval = ((int)now.txa[ Index(((int)((P2 *)_this)->w), 2) ]);
		now.txa[ Index(((P2 *)_this)->w, 2) ] = 0;
#ifdef VAR_RANGES
		logval("txa[Worker:w]", ((int)now.txa[ Index(((int)((P2 *)_this)->w), 2) ]));
#endif
		;
		_m = 3; goto P999; /* 0 */
	case 118: // STATE 144 - lease.pml:160 - [src = 0] (0:0:1 - 1)
		IfNotBlocked
		reached[2][144] = 1;
		(trpt+1)->bup.oval = ((int)((P2 *)_this)->src);
		((P2 *)_this)->src = 0;
#ifdef VAR_RANGES
		logval("Worker:src", ((int)((P2 *)_this)->src));
#endif
		;
		_m = 3; goto P999; /* 0 */
	case 119: // STATE 145 - lease.pml:160 - [s = 0] (0:0:1 - 1)
		IfNotBlocked
		reached[2][145] = 1;
		(trpt+1)->bup.oval = ((int)((P2 *)_this)->s);
		((P2 *)_this)->s = 0;
#ifdef VAR_RANGES
		logval("Worker:s", ((int)((P2 *)_this)->s));
#endif
		;
		_m = 3; goto P999; /* 0 */
	case 120: // STATE 146 - lease.pml:160 - [k = 0] (0:0:1 - 1)
		IfNotBlocked
		reached[2][146] = 1;
		(trpt+1)->bup.oval = ((int)((P2 *)_this)->k);
		((P2 *)_this)->k = 0;
#ifdef VAR_RANGES
		logval("Worker:k", ((int)((P2 *)_this)->k));
#endif
		;
		_m = 3; goto P999; /* 0 */
	case 121: // STATE 147 - lease.pml:160 - [t = 0] (0:0:1 - 1)
		IfNotBlocked
		reached[2][147] = 1;
		(trpt+1)->bup.oval = ((int)((P2 *)_this)->t);
		((P2 *)_this)->t = 0;
#ifdef VAR_RANGES
		logval("Worker:t", ((int)((P2 *)_this)->t));
#endif
		;
		_m = 3; goto P999; /* 0 */
	case 122: // STATE 148 - lease.pml:160 - [c = 0] (0:0:1 - 1)
		IfNotBlocked
		reached[2][148] = 1;
		(trpt+1)->bup.oval = ((int)((P2 *)_this)->c);
		((P2 *)_this)->c = 0;
#ifdef VAR_RANGES
		logval("Worker:c", ((int)((P2 *)_this)->c));
#endif
		;
		_m = 3; goto P999; /* 0 */
	case 123: // STATE 149 - lease.pml:160 - [sc = 0] (0:0:1 - 1)
		IfNotBlocked
		reached[2][149] = 1;
		(trpt+1)->bup.oval = ((int)((P2 *)_this)->sc);
		((P2 *)_this)->sc = 0;
#ifdef VAR_RANGES
		logval("Worker:sc", ((int)((P2 *)_this)->sc));
#endif
		;
		_m = 3; goto P999; /* 0 */
	case 124: // STATE 150 - lease.pml:160 - [e = 0] (0:0:1 - 1)
		IfNotBlocked
		reached[2][150] = 1;
		(trpt+1)->bup.oval = ((int)((P2 *)_this)->e);
		((P2 *)_this)->e = 0;
#ifdef VAR_RANGES
		logval("Worker:e", ((int)((P2 *)_this)->e));
#endif
		;
		_m = 3; goto P999; /* 0 */
	case 125: // STATE 151 - lease.pml:160 - [fp = 0] (0:0:1 - 1)
		IfNotBlocked
		reached[2][151] = 1;
		(trpt+1)->bup.oval = ((int)((P2 *)_this)->fp);
		((P2 *)_this)->fp = 0;
#ifdef VAR_RANGES
		logval("Worker:fp", ((int)((P2 *)_this)->fp));
#endif
		;
		_m = 3; goto P999; /* 0 */
	case 126: // STATE 152 - lease.pml:160 - [rf = 0] (0:0:1 - 1)
		IfNotBlocked
		reached[2][152] = 1;
		(trpt+1)->bup.oval = ((int)((P2 *)_this)->rf);
		((P2 *)_this)->rf = 0;
#ifdef VAR_RANGES
		logval("Worker:rf", ((int)((P2 *)_this)->rf));
#endif
		;
		_m = 3; goto P999; /* 0 */
	case 127: // STATE 153 - lease.pml:160 - [lost = 0] (0:0:1 - 1)
		IfNotBlocked
		reached[2][153] = 1;
		(trpt+1)->bup.oval = ((int)((P2 *)_this)->lost);
		((P2 *)_this)->lost = 0;
#ifdef VAR_RANGES
		logval("Worker:lost", ((int)((P2 *)_this)->lost));
#endif
		;
		_m = 3; goto P999; /* 0 */
	case 128: // STATE 154 - lease.pml:160 - [acq = 0] (0:0:1 - 1)
		IfNotBlocked
		reached[2][154] = 1;
		(trpt+1)->bup.oval = ((int)((P2 *)_this)->acq);
		((P2 *)_this)->acq = 0;
#ifdef VAR_RANGES
		logval("Worker:acq", ((int)((P2 *)_this)->acq));
#endif
		;
		_m = 3; goto P999; /* 0 */
	case 129: // STATE 180 - lease.pml:169 - [-end-] (0:0:0 - 1)
		IfNotBlocked
		reached[2][180] = 1;
		if (!delproc(1, II)) continue;
		_m = 3; goto P999; /* 0 */

		 /* PROC Other */
	case 130: // STATE 1 - client.pml:124 - [(nfull(toSrv))] (3:0:1 - 1)
		IfNotBlocked
		reached[1][1] = 1;
		if (!((!q_full(now.toSrv))))
			continue;
		/* merge: s = 1(0, 2, 3) */
		reached[1][2] = 1;
		(trpt+1)->bup.oval = ((int)((P1 *)_this)->s);
		((P1 *)_this)->s = 1;
#ifdef VAR_RANGES
		logval("Other:s", ((int)((P1 *)_this)->s));
#endif
		;
		_m = 3; goto P999; /* 1 */
	case 131: // STATE 3 - client.pml:124 - [toSrv!1,1,0] (0:0:0 - 1)
		IfNotBlocked
		reached[1][3] = 1;
		if (q_full(now.toSrv))
			continue;
#ifdef HAS_CODE
		if (readtrail && gui) {
			char simtmp[64];
			sprintf(simvals, "%d!", now.toSrv);
		sprintf(simtmp, "%d", 1); strcat(simvals, simtmp);		strcat(simvals, ",");
		sprintf(simtmp, "%d", 1); strcat(simvals, simtmp);		strcat(simvals, ",");
		sprintf(simtmp, "%d", 0); strcat(simvals, simtmp);		}
#endif
		
		qsend(now.toSrv, 0, 1, 1, 0, 0, 3);
		_m = 2; goto P999; /* 0 */
	case 132: // STATE 5 - client.pml:125 - [(((phase==0)&&nfull(toSrv)))] (7:0:1 - 1)
		IfNotBlocked
		reached[1][5] = 1;
		if (!(((((int)now.phase)==0)&&(!q_full(now.toSrv)))))
			continue;
		/* merge: fp = 1(0, 6, 7) */
		reached[1][6] = 1;
		(trpt+1)->bup.oval = ((int)((P1 *)_this)->fp);
		((P1 *)_this)->fp = 1;
#ifdef VAR_RANGES
		logval("Other:fp", ((int)((P1 *)_this)->fp));
#endif
		;
		_m = 3; goto P999; /* 1 */
	case 133: // STATE 7 - client.pml:125 - [toSrv!1,0,1] (0:0:0 - 1)
		IfNotBlocked
		reached[1][7] = 1;
		if (q_full(now.toSrv))
			continue;
#ifdef HAS_CODE
		if (readtrail && gui) {
			char simtmp[64];
			sprintf(simvals, "%d!", now.toSrv);
		sprintf(simtmp, "%d", 1); strcat(simvals, simtmp);		strcat(simvals, ",");
		sprintf(simtmp, "%d", 0); strcat(simvals, simtmp);		strcat(simvals, ",");
		sprintf(simtmp, "%d", 1); strcat(simvals, simtmp);		}
#endif
		
		qsend(now.toSrv, 0, 1, 0, 1, 0, 3);
		_m = 2; goto P999; /* 0 */
	case 134: // STATE 11 - client.pml:128 - [toOther?c,sc,afp,e] (0:0:4 - 3)
		reached[1][11] = 1;
		if (q_len(now.toOther) == 0) continue;

		XX=1;
		(trpt+1)->bup.ovals = grab_ints(4);
		(trpt+1)->bup.ovals[0] = ((int)((P1 *)_this)->c);
		(trpt+1)->bup.ovals[1] = ((int)((P1 *)_this)->sc);
		(trpt+1)->bup.ovals[2] = ((int)((P1 *)_this)->afp);
		(trpt+1)->bup.ovals[3] = ((int)((P1 *)_this)->e);
		;
		((P1 *)_this)->c = qrecv(now.toOther, XX-1, 0, 0);
#ifdef VAR_RANGES
		logval("Other:c", ((int)((P1 *)_this)->c));
#endif
		;
		((P1 *)_this)->sc = qrecv(now.toOther, XX-1, 1, 0);
#ifdef VAR_RANGES
		logval("Other:sc", ((int)((P1 *)_this)->sc));
#endif
		;
		((P1 *)_this)->afp = qrecv(now.toOther, XX-1, 2, 0);
#ifdef VAR_RANGES
		logval("Other:afp", ((int)((P1 *)_this)->afp));
#endif
		;
		((P1 *)_this)->e = qrecv(now.toOther, XX-1, 3, 1);
#ifdef VAR_RANGES
		logval("Other:e", ((int)((P1 *)_this)->e));
#endif
		;
		
#ifdef HAS_CODE
		if (readtrail && gui) {
			char simtmp[32];
			sprintf(simvals, "%d?", now.toOther);
		sprintf(simtmp, "%d", ((int)((P1 *)_this)->c)); strcat(simvals, simtmp);		strcat(simvals, ",");
		sprintf(simtmp, "%d", ((int)((P1 *)_this)->sc)); strcat(simvals, simtmp);		strcat(simvals, ",");
		sprintf(simtmp, "%d", ((int)((P1 *)_this)->afp)); strcat(simvals, simtmp);		strcat(simvals, ",");
		sprintf(simtmp, "%d", ((int)((P1 *)_this)->e)); strcat(simvals, simtmp);		}
#endif
		;
		_m = 4; goto P999; /* 0 */
	case 135: // STATE 12 - client.pml:130 - [(((c==1)||(c==2)))] (14:0:1 - 1)
		IfNotBlocked
		reached[1][12] = 1;
		if (!(((((int)((P1 *)_this)->c)==1)||(((int)((P1 *)_this)->c)==2))))
			continue;
		if (TstOnly) return 1; /* TT */
		/* dead 1: c */  (trpt+1)->bup.oval = ((P1 *)_this)->c;
#ifdef HAS_CODE
		if (!readtrail)
#endif
			((P1 *)_this)->c = 0;
		/* merge: assert((sc==s))(0, 13, 14) */
		reached[1][13] = 1;
		spin_assert((((int)((P1 *)_this)->sc)==((int)((P1 *)_this)->s)), "(sc==s)", II, tt, t);
		_m = 3; goto P999; /* 1 */
	case 136: // STATE 14 - client.pml:132 - [assert(((afp==fp)&&(e==committed[s])))] (0:0:0 - 1)
		IfNotBlocked
		reached[1][14] = 1;
		spin_assert(((((int)((P1 *)_this)->afp)==((int)((P1 *)_this)->fp))&&(((int)((P1 *)_this)->e)==((int)now.committed[ Index(((int)((P1 *)_this)->s), 2) ]))), "((afp==fp)&&(e==committed[s]))", II, tt, t);
		_m = 3; goto P999; /* 0 */
	case 137: // STATE 18 - client.pml:135 - [-end-] (0:0:0 - 3)
		IfNotBlocked
		reached[1][18] = 1;
		if (!delproc(1, II)) continue;
		_m = 3; goto P999; /* 0 */

		 /* PROC Client */
	case 138: // STATE 1 - client.pml:38 - [(!(started))] (5:0:1 - 1)
		IfNotBlocked
		reached[0][1] = 1;
		if (!( !(((int)now.started))))
			continue;
		/* merge: started = 1(0, 2, 5) */
		reached[0][2] = 1;
		(trpt+1)->bup.oval = ((int)now.started);
		now.started = 1;
#ifdef VAR_RANGES
		logval("started", ((int)now.started));
#endif
		;
		_m = 3; goto P999; /* 1 */
	case 139: // STATE 3 - client.pml:22 - [js = 1] (0:114:3 - 1)
		IfNotBlocked
		reached[0][3] = 1;
		(trpt+1)->bup.ovals = grab_ints(3);
		(trpt+1)->bup.ovals[0] = ((int)now.js);
		now.js = 1;
#ifdef VAR_RANGES
		logval("js", ((int)now.js));
#endif
		;
		/* merge: jd = 1(114, 4, 114) */
		reached[0][4] = 1;
		(trpt+1)->bup.ovals[1] = ((int)now.jd);
		now.jd = 1;
#ifdef VAR_RANGES
		logval("jd", ((int)now.jd));
#endif
		;
		/* merge: cs = 1(114, 6, 114) */
		reached[0][6] = 1;
		(trpt+1)->bup.ovals[2] = ((int)now.cs);
		now.cs = 1;
#ifdef VAR_RANGES
		logval("cs", ((int)now.cs));
#endif
		;
		/* merge: .(goto)(0, 115, 114) */
		reached[0][115] = 1;
		;
		_m = 3; goto P999; /* 3 */
	case 140: // STATE 8 - client.pml:46 - [(((((cs==1)||(cs==2))&&nfull(toSrv))&&nfull(toCli)))] (0:0:0 - 1)
		IfNotBlocked
		reached[0][8] = 1;
		if (!(((((((int)now.cs)==1)||(((int)now.cs)==2))&&(!q_full(now.toSrv)))&&(!q_full(now.toCli)))))
			continue;
		_m = 3; goto P999; /* 0 */
	case 141: // STATE 9 - client.pml:48 - [(((cs==2)&&(phase>0)))] (0:0:0 - 1)
		IfNotBlocked
		reached[0][9] = 1;
		if (!(((((int)now.cs)==2)&&(((int)now.phase)>0))))
			continue;
		_m = 3; goto P999; /* 0 */
	case 142: // STATE 10 - client.pml:22 - [js = 5] (0:114:3 - 1)
		IfNotBlocked
		reached[0][10] = 1;
		(trpt+1)->bup.ovals = grab_ints(3);
		(trpt+1)->bup.ovals[0] = ((int)now.js);
		now.js = 5;
#ifdef VAR_RANGES
		logval("js", ((int)now.js));
#endif
		;
		/* merge: jd = 5(114, 11, 114) */
		reached[0][11] = 1;
		(trpt+1)->bup.ovals[1] = ((int)now.jd);
		now.jd = 5;
#ifdef VAR_RANGES
		logval("jd", ((int)now.jd));
#endif
		;
		/* merge: cs = 0(114, 13, 114) */
		reached[0][13] = 1;
		(trpt+1)->bup.ovals[2] = ((int)now.cs);
		now.cs = 0;
#ifdef VAR_RANGES
		logval("cs", ((int)now.cs));
#endif
		;
		/* merge: .(goto)(114, 36, 114) */
		reached[0][36] = 1;
		;
		/* merge: .(goto)(0, 115, 114) */
		reached[0][115] = 1;
		;
		_m = 3; goto P999; /* 4 */
	case 143: // STATE 36 - client.pml:50 - [.(goto)] (0:114:0 - 2)
		IfNotBlocked
		reached[0][36] = 1;
		;
		/* merge: .(goto)(0, 115, 114) */
		reached[0][115] = 1;
		;
		_m = 3; goto P999; /* 1 */
	case 144: // STATE 16 - network.pml:31 - [toSrv!0,0,0] (114:0:2 - 1)
		IfNotBlocked
		reached[0][16] = 1;
		if (q_full(now.toSrv))
			continue;
#ifdef HAS_CODE
		if (readtrail && gui) {
			char simtmp[64];
			sprintf(simvals, "%d!", now.toSrv);
		sprintf(simtmp, "%d", 0); strcat(simvals, simtmp);		strcat(simvals, ",");
		sprintf(simtmp, "%d", 0); strcat(simvals, simtmp);		strcat(simvals, ",");
		sprintf(simtmp, "%d", 0); strcat(simvals, simtmp);		}
#endif
		
		qsend(now.toSrv, 0, 0, 0, 0, 0, 3);
		/* merge: printf('client: sends the request\\n')(114, 17, 114) */
		reached[0][17] = 1;
		Printf("client: sends the request\n");
		/* merge: .(goto)(114, 31, 114) */
		reached[0][31] = 1;
		;
		/* merge: sent = 1(114, 33, 114) */
		reached[0][33] = 1;
		(trpt+1)->bup.ovals = grab_ints(2);
		(trpt+1)->bup.ovals[0] = ((int)now.sent);
		now.sent = 1;
#ifdef VAR_RANGES
		logval("sent", ((int)now.sent));
#endif
		;
		/* merge: cs = ( ((js==0)) -> (4) : (3) )(114, 34, 114) */
		reached[0][34] = 1;
		(trpt+1)->bup.ovals[1] = ((int)now.cs);
		now.cs = ( ((((int)now.js)==0)) ? (4) : (3) );
#ifdef VAR_RANGES
		logval("cs", ((int)now.cs));
#endif
		;
		/* merge: .(goto)(114, 36, 114) */
		reached[0][36] = 1;
		;
		/* merge: .(goto)(0, 115, 114) */
		reached[0][115] = 1;
		;
		_m = 2; goto P999; /* 6 */
	case 145: // STATE 18 - network.pml:32 - [((1&&((nf<3)&&!(calm))))] (114:0:3 - 1)
		IfNotBlocked
		reached[0][18] = 1;
		if (!((1&&((((int)now.nf)<3)&& !(((int)now.calm))))))
			continue;
		/* merge: nf = (nf+1)(114, 19, 114) */
		reached[0][19] = 1;
		(trpt+1)->bup.ovals = grab_ints(3);
		(trpt+1)->bup.ovals[0] = ((int)now.nf);
		now.nf = (((int)now.nf)+1);
#ifdef VAR_RANGES
		logval("nf", ((int)now.nf));
#endif
		;
		/* merge: printf('network: loses the request\\n')(114, 20, 114) */
		reached[0][20] = 1;
		Printf("network: loses the request\n");
		/* merge: .(goto)(114, 31, 114) */
		reached[0][31] = 1;
		;
		/* merge: sent = 1(114, 33, 114) */
		reached[0][33] = 1;
		(trpt+1)->bup.ovals[1] = ((int)now.sent);
		now.sent = 1;
#ifdef VAR_RANGES
		logval("sent", ((int)now.sent));
#endif
		;
		/* merge: cs = ( ((js==0)) -> (4) : (3) )(114, 34, 114) */
		reached[0][34] = 1;
		(trpt+1)->bup.ovals[2] = ((int)now.cs);
		now.cs = ( ((((int)now.js)==0)) ? (4) : (3) );
#ifdef VAR_RANGES
		logval("cs", ((int)now.cs));
#endif
		;
		/* merge: .(goto)(114, 36, 114) */
		reached[0][36] = 1;
		;
		/* merge: .(goto)(0, 115, 114) */
		reached[0][115] = 1;
		;
		_m = 3; goto P999; /* 7 */
	case 146: // STATE 21 - network.pml:33 - [(((1&&((nf<3)&&!(calm)))&&(len(toSrv)<(3-1))))] (23:0:1 - 1)
		IfNotBlocked
		reached[0][21] = 1;
		if (!(((1&&((((int)now.nf)<3)&& !(((int)now.calm))))&&(q_len(now.toSrv)<(3-1)))))
			continue;
		/* merge: nf = (nf+1)(0, 22, 23) */
		reached[0][22] = 1;
		(trpt+1)->bup.oval = ((int)now.nf);
		now.nf = (((int)now.nf)+1);
#ifdef VAR_RANGES
		logval("nf", ((int)now.nf));
#endif
		;
		_m = 3; goto P999; /* 1 */
	case 147: // STATE 23 - network.pml:34 - [toSrv!0,0,0] (0:0:0 - 1)
		IfNotBlocked
		reached[0][23] = 1;
		if (q_full(now.toSrv))
			continue;
#ifdef HAS_CODE
		if (readtrail && gui) {
			char simtmp[64];
			sprintf(simvals, "%d!", now.toSrv);
		sprintf(simtmp, "%d", 0); strcat(simvals, simtmp);		strcat(simvals, ",");
		sprintf(simtmp, "%d", 0); strcat(simvals, simtmp);		strcat(simvals, ",");
		sprintf(simtmp, "%d", 0); strcat(simvals, simtmp);		}
#endif
		
		qsend(now.toSrv, 0, 0, 0, 0, 0, 3);
		_m = 2; goto P999; /* 0 */
	case 148: // STATE 24 - network.pml:34 - [toSrv!0,0,0] (114:0:2 - 1)
		IfNotBlocked
		reached[0][24] = 1;
		if (q_full(now.toSrv))
			continue;
#ifdef HAS_CODE
		if (readtrail && gui) {
			char simtmp[64];
			sprintf(simvals, "%d!", now.toSrv);
		sprintf(simtmp, "%d", 0); strcat(simvals, simtmp);		strcat(simvals, ",");
		sprintf(simtmp, "%d", 0); strcat(simvals, simtmp);		strcat(simvals, ",");
		sprintf(simtmp, "%d", 0); strcat(simvals, simtmp);		}
#endif
		
		qsend(now.toSrv, 0, 0, 0, 0, 0, 3);
		/* merge: printf('client: sends the request; the network will deliver it twice\\n')(114, 25, 114) */
		reached[0][25] = 1;
		Printf("client: sends the request; the network will deliver it twice\n");
		/* merge: .(goto)(114, 31, 114) */
		reached[0][31] = 1;
		;
		/* merge: sent = 1(114, 33, 114) */
		reached[0][33] = 1;
		(trpt+1)->bup.ovals = grab_ints(2);
		(trpt+1)->bup.ovals[0] = ((int)now.sent);
		now.sent = 1;
#ifdef VAR_RANGES
		logval("sent", ((int)now.sent));
#endif
		;
		/* merge: cs = ( ((js==0)) -> (4) : (3) )(114, 34, 114) */
		reached[0][34] = 1;
		(trpt+1)->bup.ovals[1] = ((int)now.cs);
		now.cs = ( ((((int)now.js)==0)) ? (4) : (3) );
#ifdef VAR_RANGES
		logval("cs", ((int)now.cs));
#endif
		;
		/* merge: .(goto)(114, 36, 114) */
		reached[0][36] = 1;
		;
		/* merge: .(goto)(0, 115, 114) */
		reached[0][115] = 1;
		;
		_m = 2; goto P999; /* 6 */
	case 149: // STATE 26 - network.pml:36 - [((1&&((nf<3)&&!(calm))))] (28:0:1 - 1)
		IfNotBlocked
		reached[0][26] = 1;
		if (!((1&&((((int)now.nf)<3)&& !(((int)now.calm))))))
			continue;
		/* merge: nf = (nf+1)(0, 27, 28) */
		reached[0][27] = 1;
		(trpt+1)->bup.oval = ((int)now.nf);
		now.nf = (((int)now.nf)+1);
#ifdef VAR_RANGES
		logval("nf", ((int)now.nf));
#endif
		;
		_m = 3; goto P999; /* 1 */
	case 150: // STATE 28 - network.pml:36 - [toCli!6,0,0,0] (114:0:2 - 1)
		IfNotBlocked
		reached[0][28] = 1;
		if (q_full(now.toCli))
			continue;
#ifdef HAS_CODE
		if (readtrail && gui) {
			char simtmp[64];
			sprintf(simvals, "%d!", now.toCli);
		sprintf(simtmp, "%d", 6); strcat(simvals, simtmp);		strcat(simvals, ",");
		sprintf(simtmp, "%d", 0); strcat(simvals, simtmp);		strcat(simvals, ",");
		sprintf(simtmp, "%d", 0); strcat(simvals, simtmp);		strcat(simvals, ",");
		sprintf(simtmp, "%d", 0); strcat(simvals, simtmp);		}
#endif
		
		qsend(now.toCli, 0, 6, 0, 0, 0, 4);
		/* merge: printf('client: sends the request; it is refused for its credentials (401)\\n')(114, 29, 114) */
		reached[0][29] = 1;
		Printf("client: sends the request; it is refused for its credentials (401)\n");
		/* merge: .(goto)(114, 31, 114) */
		reached[0][31] = 1;
		;
		/* merge: sent = 1(114, 33, 114) */
		reached[0][33] = 1;
		(trpt+1)->bup.ovals = grab_ints(2);
		(trpt+1)->bup.ovals[0] = ((int)now.sent);
		now.sent = 1;
#ifdef VAR_RANGES
		logval("sent", ((int)now.sent));
#endif
		;
		/* merge: cs = ( ((js==0)) -> (4) : (3) )(114, 34, 114) */
		reached[0][34] = 1;
		(trpt+1)->bup.ovals[1] = ((int)now.cs);
		now.cs = ( ((((int)now.js)==0)) ? (4) : (3) );
#ifdef VAR_RANGES
		logval("cs", ((int)now.cs));
#endif
		;
		/* merge: .(goto)(114, 36, 114) */
		reached[0][36] = 1;
		;
		/* merge: .(goto)(0, 115, 114) */
		reached[0][115] = 1;
		;
		_m = 2; goto P999; /* 6 */
	case 151: // STATE 33 - client.pml:49 - [sent = 1] (0:114:2 - 5)
		IfNotBlocked
		reached[0][33] = 1;
		(trpt+1)->bup.ovals = grab_ints(2);
		(trpt+1)->bup.ovals[0] = ((int)now.sent);
		now.sent = 1;
#ifdef VAR_RANGES
		logval("sent", ((int)now.sent));
#endif
		;
		/* merge: cs = ( ((js==0)) -> (4) : (3) )(114, 34, 114) */
		reached[0][34] = 1;
		(trpt+1)->bup.ovals[1] = ((int)now.cs);
		now.cs = ( ((((int)now.js)==0)) ? (4) : (3) );
#ifdef VAR_RANGES
		logval("cs", ((int)now.cs));
#endif
		;
		/* merge: .(goto)(114, 36, 114) */
		reached[0][36] = 1;
		;
		/* merge: .(goto)(0, 115, 114) */
		reached[0][115] = 1;
		;
		_m = 3; goto P999; /* 3 */
	case 152: // STATE 38 - client.pml:60 - [toCli?c,sc,fp,e] (0:0:4 - 1)
		reached[0][38] = 1;
		if (q_len(now.toCli) == 0) continue;

		XX=1;
		(trpt+1)->bup.ovals = grab_ints(4);
		(trpt+1)->bup.ovals[0] = ((int)((P0 *)_this)->c);
		(trpt+1)->bup.ovals[1] = ((int)((P0 *)_this)->sc);
		(trpt+1)->bup.ovals[2] = ((int)((P0 *)_this)->fp);
		(trpt+1)->bup.ovals[3] = ((int)((P0 *)_this)->e);
		;
		((P0 *)_this)->c = qrecv(now.toCli, XX-1, 0, 0);
#ifdef VAR_RANGES
		logval("Client:c", ((int)((P0 *)_this)->c));
#endif
		;
		((P0 *)_this)->sc = qrecv(now.toCli, XX-1, 1, 0);
#ifdef VAR_RANGES
		logval("Client:sc", ((int)((P0 *)_this)->sc));
#endif
		;
		((P0 *)_this)->fp = qrecv(now.toCli, XX-1, 2, 0);
#ifdef VAR_RANGES
		logval("Client:fp", ((int)((P0 *)_this)->fp));
#endif
		;
		((P0 *)_this)->e = qrecv(now.toCli, XX-1, 3, 1);
#ifdef VAR_RANGES
		logval("Client:e", ((int)((P0 *)_this)->e));
#endif
		;
		
#ifdef HAS_CODE
		if (readtrail && gui) {
			char simtmp[32];
			sprintf(simvals, "%d?", now.toCli);
		sprintf(simtmp, "%d", ((int)((P0 *)_this)->c)); strcat(simvals, simtmp);		strcat(simvals, ",");
		sprintf(simtmp, "%d", ((int)((P0 *)_this)->sc)); strcat(simvals, simtmp);		strcat(simvals, ",");
		sprintf(simtmp, "%d", ((int)((P0 *)_this)->fp)); strcat(simvals, simtmp);		strcat(simvals, ",");
		sprintf(simtmp, "%d", ((int)((P0 *)_this)->e)); strcat(simvals, simtmp);		}
#endif
		;
		_m = 4; goto P999; /* 0 */
	case 153: // STATE 39 - client.pml:62 - [((cs==3))] (0:0:0 - 1)
		IfNotBlocked
		reached[0][39] = 1;
		if (!((((int)now.cs)==3)))
			continue;
		_m = 3; goto P999; /* 0 */
	case 154: // STATE 40 - client.pml:64 - [(((c==1)||(c==2)))] (114:0:7 - 1)
		IfNotBlocked
		reached[0][40] = 1;
		if (!(((((int)((P0 *)_this)->c)==1)||(((int)((P0 *)_this)->c)==2))))
			continue;
		if (TstOnly) return 1; /* TT */
		/* dead 1: c */  (trpt+1)->bup.ovals = grab_ints(7);
		(trpt+1)->bup.ovals[0] = ((P0 *)_this)->c;
#ifdef HAS_CODE
		if (!readtrail)
#endif
			((P0 *)_this)->c = 0;
		/* merge: assert((sc==0))(114, 41, 114) */
		reached[0][41] = 1;
		spin_assert((((int)((P0 *)_this)->sc)==0), "(sc==0)", II, tt, t);
		/* merge: assert(((fp==0)&&(e==committed[0])))(114, 42, 114) */
		reached[0][42] = 1;
		spin_assert(((((int)((P0 *)_this)->fp)==0)&&(((int)((P0 *)_this)->e)==((int)now.committed[0]))), "((fp==0)&&(e==committed[0]))", II, tt, t);
		/* merge: js = 3(114, 43, 114) */
		reached[0][43] = 1;
		(trpt+1)->bup.ovals[1] = ((int)now.js);
		now.js = 3;
#ifdef VAR_RANGES
		logval("js", ((int)now.js));
#endif
		;
		/* merge: cs = 0(114, 44, 114) */
		reached[0][44] = 1;
		(trpt+1)->bup.ovals[2] = ((int)now.cs);
		now.cs = 0;
#ifdef VAR_RANGES
		logval("cs", ((int)now.cs));
#endif
		;
		/* merge: printf('client: gets 200 (execution %d): completed, written lazily\\n',e)(114, 45, 114) */
		reached[0][45] = 1;
		Printf("client: gets 200 (execution %d): completed, written lazily\n", ((int)((P0 *)_this)->e));
		/* merge: .(goto)(114, 60, 114) */
		reached[0][60] = 1;
		;
		/* merge: .(goto)(114, 63, 114) */
		reached[0][63] = 1;
		;
		/* merge: c = 0(114, 64, 114) */
		reached[0][64] = 1;
		(trpt+1)->bup.ovals[3] = ((int)((P0 *)_this)->c);
		((P0 *)_this)->c = 0;
#ifdef VAR_RANGES
		logval("Client:c", ((int)((P0 *)_this)->c));
#endif
		;
		/* merge: sc = 0(114, 65, 114) */
		reached[0][65] = 1;
		(trpt+1)->bup.ovals[4] = ((int)((P0 *)_this)->sc);
		((P0 *)_this)->sc = 0;
#ifdef VAR_RANGES
		logval("Client:sc", ((int)((P0 *)_this)->sc));
#endif
		;
		/* merge: fp = 0(114, 66, 114) */
		reached[0][66] = 1;
		(trpt+1)->bup.ovals[5] = ((int)((P0 *)_this)->fp);
		((P0 *)_this)->fp = 0;
#ifdef VAR_RANGES
		logval("Client:fp", ((int)((P0 *)_this)->fp));
#endif
		;
		/* merge: e = 0(114, 67, 114) */
		reached[0][67] = 1;
		(trpt+1)->bup.ovals[6] = ((int)((P0 *)_this)->e);
		((P0 *)_this)->e = 0;
#ifdef VAR_RANGES
		logval("Client:e", ((int)((P0 *)_this)->e));
#endif
		;
		/* merge: .(goto)(0, 115, 114) */
		reached[0][115] = 1;
		;
		_m = 3; goto P999; /* 12 */
	case 155: // STATE 46 - client.pml:69 - [((c==4))] (114:0:7 - 1)
		IfNotBlocked
		reached[0][46] = 1;
		if (!((((int)((P0 *)_this)->c)==4)))
			continue;
		if (TstOnly) return 1; /* TT */
		/* dead 1: c */  (trpt+1)->bup.ovals = grab_ints(7);
		(trpt+1)->bup.ovals[0] = ((P0 *)_this)->c;
#ifdef HAS_CODE
		if (!readtrail)
#endif
			((P0 *)_this)->c = 0;
		/* merge: js = 4(114, 47, 114) */
		reached[0][47] = 1;
		(trpt+1)->bup.ovals[1] = ((int)now.js);
		now.js = 4;
#ifdef VAR_RANGES
		logval("js", ((int)now.js));
#endif
		;
		/* merge: cs = 0(114, 48, 114) */
		reached[0][48] = 1;
		(trpt+1)->bup.ovals[2] = ((int)now.cs);
		now.cs = 0;
#ifdef VAR_RANGES
		logval("cs", ((int)now.cs));
#endif
		;
		/* merge: printf('client: gets 422: failed, written lazily\\n')(114, 49, 114) */
		reached[0][49] = 1;
		Printf("client: gets 422: failed, written lazily\n");
		/* merge: .(goto)(114, 60, 114) */
		reached[0][60] = 1;
		;
		/* merge: .(goto)(114, 63, 114) */
		reached[0][63] = 1;
		;
		/* merge: c = 0(114, 64, 114) */
		reached[0][64] = 1;
		(trpt+1)->bup.ovals[3] = ((int)((P0 *)_this)->c);
		((P0 *)_this)->c = 0;
#ifdef VAR_RANGES
		logval("Client:c", ((int)((P0 *)_this)->c));
#endif
		;
		/* merge: sc = 0(114, 65, 114) */
		reached[0][65] = 1;
		(trpt+1)->bup.ovals[4] = ((int)((P0 *)_this)->sc);
		((P0 *)_this)->sc = 0;
#ifdef VAR_RANGES
		logval("Client:sc", ((int)((P0 *)_this)->sc));
#endif
		;
		/* merge: fp = 0(114, 66, 114) */
		reached[0][66] = 1;
		(trpt+1)->bup.ovals[5] = ((int)((P0 *)_this)->fp);
		((P0 *)_this)->fp = 0;
#ifdef VAR_RANGES
		logval("Client:fp", ((int)((P0 *)_this)->fp));
#endif
		;
		/* merge: e = 0(114, 67, 114) */
		reached[0][67] = 1;
		(trpt+1)->bup.ovals[6] = ((int)((P0 *)_this)->e);
		((P0 *)_this)->e = 0;
#ifdef VAR_RANGES
		logval("Client:e", ((int)((P0 *)_this)->e));
#endif
		;
		/* merge: .(goto)(0, 115, 114) */
		reached[0][115] = 1;
		;
		_m = 3; goto P999; /* 10 */
	case 156: // STATE 50 - client.pml:71 - [((c==6))] (0:0:1 - 1)
		IfNotBlocked
		reached[0][50] = 1;
		if (!((((int)((P0 *)_this)->c)==6)))
			continue;
		if (TstOnly) return 1; /* TT */
		/* dead 1: c */  (trpt+1)->bup.oval = ((P0 *)_this)->c;
#ifdef HAS_CODE
		if (!readtrail)
#endif
			((P0 *)_this)->c = 0;
		_m = 3; goto P999; /* 0 */
	case 157: // STATE 51 - client.pml:22 - [js = 2] (0:114:7 - 1)
		IfNotBlocked
		reached[0][51] = 1;
		(trpt+1)->bup.ovals = grab_ints(7);
		(trpt+1)->bup.ovals[0] = ((int)now.js);
		now.js = 2;
#ifdef VAR_RANGES
		logval("js", ((int)now.js));
#endif
		;
		/* merge: jd = 2(114, 52, 114) */
		reached[0][52] = 1;
		(trpt+1)->bup.ovals[1] = ((int)now.jd);
		now.jd = 2;
#ifdef VAR_RANGES
		logval("jd", ((int)now.jd));
#endif
		;
		/* merge: cs = 0(114, 54, 114) */
		reached[0][54] = 1;
		(trpt+1)->bup.ovals[2] = ((int)now.cs);
		now.cs = 0;
#ifdef VAR_RANGES
		logval("cs", ((int)now.cs));
#endif
		;
		/* merge: printf('client: gets 401: refused, written durably\\n')(114, 55, 114) */
		reached[0][55] = 1;
		Printf("client: gets 401: refused, written durably\n");
		/* merge: .(goto)(114, 60, 114) */
		reached[0][60] = 1;
		;
		/* merge: .(goto)(114, 63, 114) */
		reached[0][63] = 1;
		;
		/* merge: c = 0(114, 64, 114) */
		reached[0][64] = 1;
		(trpt+1)->bup.ovals[3] = ((int)((P0 *)_this)->c);
		((P0 *)_this)->c = 0;
#ifdef VAR_RANGES
		logval("Client:c", ((int)((P0 *)_this)->c));
#endif
		;
		/* merge: sc = 0(114, 65, 114) */
		reached[0][65] = 1;
		(trpt+1)->bup.ovals[4] = ((int)((P0 *)_this)->sc);
		((P0 *)_this)->sc = 0;
#ifdef VAR_RANGES
		logval("Client:sc", ((int)((P0 *)_this)->sc));
#endif
		;
		/* merge: fp = 0(114, 66, 114) */
		reached[0][66] = 1;
		(trpt+1)->bup.ovals[5] = ((int)((P0 *)_this)->fp);
		((P0 *)_this)->fp = 0;
#ifdef VAR_RANGES
		logval("Client:fp", ((int)((P0 *)_this)->fp));
#endif
		;
		/* merge: e = 0(114, 67, 114) */
		reached[0][67] = 1;
		(trpt+1)->bup.ovals[6] = ((int)((P0 *)_this)->e);
		((P0 *)_this)->e = 0;
#ifdef VAR_RANGES
		logval("Client:e", ((int)((P0 *)_this)->e));
#endif
		;
		/* merge: .(goto)(0, 115, 114) */
		reached[0][115] = 1;
		;
		_m = 3; goto P999; /* 10 */
	case 158: // STATE 56 - client.pml:73 - [(((c==3)||(c==5)))] (114:0:5 - 1)
		IfNotBlocked
		reached[0][56] = 1;
		if (!(((((int)((P0 *)_this)->c)==3)||(((int)((P0 *)_this)->c)==5))))
			continue;
		/* merge: cs = 2(114, 57, 114) */
		reached[0][57] = 1;
		(trpt+1)->bup.ovals = grab_ints(5);
		(trpt+1)->bup.ovals[0] = ((int)now.cs);
		now.cs = 2;
#ifdef VAR_RANGES
		logval("cs", ((int)now.cs));
#endif
		;
		/* merge: printf('client: gets %d: will retry\\n',( (((c==1)||(c==2))) -> (200) : (( ((c==3)) -> (409) : (( ((c==4)) -> (422) : (( ((c==5)) -> (500) : (401) )) )) )) ))(114, 58, 114) */
		reached[0][58] = 1;
		Printf("client: gets %d: will retry\n", ( (((((int)((P0 *)_this)->c)==1)||(((int)((P0 *)_this)->c)==2))) ? (200) : (( ((((int)((P0 *)_this)->c)==3)) ? (409) : (( ((((int)((P0 *)_this)->c)==4)) ? (422) : (( ((((int)((P0 *)_this)->c)==5)) ? (500) : (401) )) )) )) ));
		/* merge: .(goto)(114, 60, 114) */
		reached[0][60] = 1;
		;
		/* merge: .(goto)(114, 63, 114) */
		reached[0][63] = 1;
		;
		/* merge: c = 0(114, 64, 114) */
		reached[0][64] = 1;
		(trpt+1)->bup.ovals[1] = ((int)((P0 *)_this)->c);
		((P0 *)_this)->c = 0;
#ifdef VAR_RANGES
		logval("Client:c", ((int)((P0 *)_this)->c));
#endif
		;
		/* merge: sc = 0(114, 65, 114) */
		reached[0][65] = 1;
		(trpt+1)->bup.ovals[2] = ((int)((P0 *)_this)->sc);
		((P0 *)_this)->sc = 0;
#ifdef VAR_RANGES
		logval("Client:sc", ((int)((P0 *)_this)->sc));
#endif
		;
		/* merge: fp = 0(114, 66, 114) */
		reached[0][66] = 1;
		(trpt+1)->bup.ovals[3] = ((int)((P0 *)_this)->fp);
		((P0 *)_this)->fp = 0;
#ifdef VAR_RANGES
		logval("Client:fp", ((int)((P0 *)_this)->fp));
#endif
		;
		/* merge: e = 0(114, 67, 114) */
		reached[0][67] = 1;
		(trpt+1)->bup.ovals[4] = ((int)((P0 *)_this)->e);
		((P0 *)_this)->e = 0;
#ifdef VAR_RANGES
		logval("Client:e", ((int)((P0 *)_this)->e));
#endif
		;
		/* merge: .(goto)(0, 115, 114) */
		reached[0][115] = 1;
		;
		_m = 3; goto P999; /* 9 */
	case 159: // STATE 64 - client.pml:78 - [c = 0] (0:114:4 - 7)
		IfNotBlocked
		reached[0][64] = 1;
		(trpt+1)->bup.ovals = grab_ints(4);
		(trpt+1)->bup.ovals[0] = ((int)((P0 *)_this)->c);
		((P0 *)_this)->c = 0;
#ifdef VAR_RANGES
		logval("Client:c", ((int)((P0 *)_this)->c));
#endif
		;
		/* merge: sc = 0(114, 65, 114) */
		reached[0][65] = 1;
		(trpt+1)->bup.ovals[1] = ((int)((P0 *)_this)->sc);
		((P0 *)_this)->sc = 0;
#ifdef VAR_RANGES
		logval("Client:sc", ((int)((P0 *)_this)->sc));
#endif
		;
		/* merge: fp = 0(114, 66, 114) */
		reached[0][66] = 1;
		(trpt+1)->bup.ovals[2] = ((int)((P0 *)_this)->fp);
		((P0 *)_this)->fp = 0;
#ifdef VAR_RANGES
		logval("Client:fp", ((int)((P0 *)_this)->fp));
#endif
		;
		/* merge: e = 0(114, 67, 114) */
		reached[0][67] = 1;
		(trpt+1)->bup.ovals[3] = ((int)((P0 *)_this)->e);
		((P0 *)_this)->e = 0;
#ifdef VAR_RANGES
		logval("Client:e", ((int)((P0 *)_this)->e));
#endif
		;
		/* merge: .(goto)(0, 115, 114) */
		reached[0][115] = 1;
		;
		_m = 3; goto P999; /* 4 */
	case 160: // STATE 69 - client.pml:82 - [(((cs==3)&&!((((toSrv??[0,_,_]||(len(toCli)>0))||(wsrc[0]==(0+1)))||(wsrc[1]==(0+1))))))] (114:0:1 - 1)
		IfNotBlocked
		reached[0][69] = 1;
		if (!(((((int)now.cs)==3)&& !((((Q_has(now.toSrv, 1, 0, 0, 0, 0, 0, 0, 0)||(q_len(now.toCli)>0))||(((int)now.wsrc[0])==(0+1)))||(((int)now.wsrc[1])==(0+1)))))))
			continue;
		/* merge: cs = 2(0, 70, 114) */
		reached[0][70] = 1;
		(trpt+1)->bup.oval = ((int)now.cs);
		now.cs = 2;
#ifdef VAR_RANGES
		logval("cs", ((int)now.cs));
#endif
		;
		/* merge: .(goto)(0, 115, 114) */
		reached[0][115] = 1;
		;
		_m = 3; goto P999; /* 2 */
	case 161: // STATE 72 - client.pml:84 - [(((1&&((nf<3)&&!(calm)))&&(cs==3)))] (114:0:2 - 1)
		IfNotBlocked
		reached[0][72] = 1;
		if (!(((1&&((((int)now.nf)<3)&& !(((int)now.calm))))&&(((int)now.cs)==3))))
			continue;
		/* merge: nf = (nf+1)(114, 73, 114) */
		reached[0][73] = 1;
		(trpt+1)->bup.ovals = grab_ints(2);
		(trpt+1)->bup.ovals[0] = ((int)now.nf);
		now.nf = (((int)now.nf)+1);
#ifdef VAR_RANGES
		logval("nf", ((int)now.nf));
#endif
		;
		/* merge: cs = 2(114, 74, 114) */
		reached[0][74] = 1;
		(trpt+1)->bup.ovals[1] = ((int)now.cs);
		now.cs = 2;
#ifdef VAR_RANGES
		logval("cs", ((int)now.cs));
#endif
		;
		/* merge: .(goto)(0, 115, 114) */
		reached[0][115] = 1;
		;
		_m = 3; goto P999; /* 3 */
	case 162: // STATE 76 - client.pml:88 - [(((js==2)&&(cs==0)))] (0:0:0 - 1)
		IfNotBlocked
		reached[0][76] = 1;
		if (!(((((int)now.js)==2)&&(((int)now.cs)==0))))
			continue;
		_m = 3; goto P999; /* 0 */
	case 163: // STATE 77 - client.pml:90 - [((phase>0))] (0:0:0 - 1)
		IfNotBlocked
		reached[0][77] = 1;
		if (!((((int)now.phase)>0)))
			continue;
		_m = 3; goto P999; /* 0 */
	case 164: // STATE 78 - client.pml:22 - [js = 5] (0:114:3 - 1)
		IfNotBlocked
		reached[0][78] = 1;
		(trpt+1)->bup.ovals = grab_ints(3);
		(trpt+1)->bup.ovals[0] = ((int)now.js);
		now.js = 5;
#ifdef VAR_RANGES
		logval("js", ((int)now.js));
#endif
		;
		/* merge: jd = 5(114, 79, 114) */
		reached[0][79] = 1;
		(trpt+1)->bup.ovals[1] = ((int)now.jd);
		now.jd = 5;
#ifdef VAR_RANGES
		logval("jd", ((int)now.jd));
#endif
		;
		/* merge: cs = 0(114, 81, 114) */
		reached[0][81] = 1;
		(trpt+1)->bup.ovals[2] = ((int)now.cs);
		now.cs = 0;
#ifdef VAR_RANGES
		logval("cs", ((int)now.cs));
#endif
		;
		/* merge: .(goto)(114, 89, 114) */
		reached[0][89] = 1;
		;
		/* merge: .(goto)(0, 115, 114) */
		reached[0][115] = 1;
		;
		_m = 3; goto P999; /* 4 */
	case 165: // STATE 89 - client.pml:92 - [.(goto)] (0:114:0 - 2)
		IfNotBlocked
		reached[0][89] = 1;
		;
		/* merge: .(goto)(0, 115, 114) */
		reached[0][115] = 1;
		;
		_m = 3; goto P999; /* 1 */
	case 166: // STATE 84 - client.pml:22 - [js = 1] (0:114:3 - 1)
		IfNotBlocked
		reached[0][84] = 1;
		(trpt+1)->bup.ovals = grab_ints(3);
		(trpt+1)->bup.ovals[0] = ((int)now.js);
		now.js = 1;
#ifdef VAR_RANGES
		logval("js", ((int)now.js));
#endif
		;
		/* merge: jd = 1(114, 85, 114) */
		reached[0][85] = 1;
		(trpt+1)->bup.ovals[1] = ((int)now.jd);
		now.jd = 1;
#ifdef VAR_RANGES
		logval("jd", ((int)now.jd));
#endif
		;
		/* merge: cs = 1(114, 87, 114) */
		reached[0][87] = 1;
		(trpt+1)->bup.ovals[2] = ((int)now.cs);
		now.cs = 1;
#ifdef VAR_RANGES
		logval("cs", ((int)now.cs));
#endif
		;
		/* merge: .(goto)(114, 89, 114) */
		reached[0][89] = 1;
		;
		/* merge: .(goto)(0, 115, 114) */
		reached[0][115] = 1;
		;
		_m = 3; goto P999; /* 4 */
	case 167: // STATE 91 - client.pml:95 - [((jd!=js))] (114:0:1 - 1)
		IfNotBlocked
		reached[0][91] = 1;
		if (!((((int)now.jd)!=((int)now.js))))
			continue;
		/* merge: jd = js(0, 92, 114) */
		reached[0][92] = 1;
		(trpt+1)->bup.oval = ((int)now.jd);
		now.jd = ((int)now.js);
#ifdef VAR_RANGES
		logval("jd", ((int)now.jd));
#endif
		;
		/* merge: .(goto)(0, 115, 114) */
		reached[0][115] = 1;
		;
		_m = 3; goto P999; /* 2 */
	case 168: // STATE 94 - client.pml:100 - [(((1&&((nf<3)&&!(calm)))&&started))] (111:0:3 - 1)
		IfNotBlocked
		reached[0][94] = 1;
		if (!(((1&&((((int)now.nf)<3)&& !(((int)now.calm))))&&((int)now.started))))
			continue;
		/* merge: nf = (nf+1)(111, 95, 111) */
		reached[0][95] = 1;
		(trpt+1)->bup.ovals = grab_ints(3);
		(trpt+1)->bup.ovals[0] = ((int)now.nf);
		now.nf = (((int)now.nf)+1);
#ifdef VAR_RANGES
		logval("nf", ((int)now.nf));
#endif
		;
		/* merge: printf('client: crashes (the journal on disk says %d) and calls Resume\\n',jd)(111, 96, 111) */
		reached[0][96] = 1;
		Printf("client: crashes (the journal on disk says %d) and calls Resume\n", ((int)now.jd));
		/* merge: js = jd(111, 97, 111) */
		reached[0][97] = 1;
		(trpt+1)->bup.ovals[1] = ((int)now.js);
		now.js = ((int)now.jd);
#ifdef VAR_RANGES
		logval("js", ((int)now.js));
#endif
		;
		/* merge: cs = 0(111, 98, 111) */
		reached[0][98] = 1;
		(trpt+1)->bup.ovals[2] = ((int)now.cs);
		now.cs = 0;
#ifdef VAR_RANGES
		logval("cs", ((int)now.cs));
#endif
		;
		_m = 3; goto P999; /* 4 */
	case 169: // STATE 99 - client.pml:104 - [((js==1))] (0:0:0 - 1)
		IfNotBlocked
		reached[0][99] = 1;
		if (!((((int)now.js)==1)))
			continue;
		_m = 3; goto P999; /* 0 */
	case 170: // STATE 100 - client.pml:107 - [((phase>0))] (0:0:0 - 1)
		IfNotBlocked
		reached[0][100] = 1;
		if (!((((int)now.phase)>0)))
			continue;
		_m = 3; goto P999; /* 0 */
	case 171: // STATE 101 - client.pml:22 - [js = 5] (0:114:3 - 1)
		IfNotBlocked
		reached[0][101] = 1;
		(trpt+1)->bup.ovals = grab_ints(3);
		(trpt+1)->bup.ovals[0] = ((int)now.js);
		now.js = 5;
#ifdef VAR_RANGES
		logval("js", ((int)now.js));
#endif
		;
		/* merge: jd = 5(114, 102, 114) */
		reached[0][102] = 1;
		(trpt+1)->bup.ovals[1] = ((int)now.jd);
		now.jd = 5;
#ifdef VAR_RANGES
		logval("jd", ((int)now.jd));
#endif
		;
		/* merge: cs = 0(114, 104, 114) */
		reached[0][104] = 1;
		(trpt+1)->bup.ovals[2] = ((int)now.cs);
		now.cs = 0;
#ifdef VAR_RANGES
		logval("cs", ((int)now.cs));
#endif
		;
		/* merge: .(goto)(114, 109, 114) */
		reached[0][109] = 1;
		;
		/* merge: .(goto)(114, 112, 114) */
		reached[0][112] = 1;
		;
		/* merge: .(goto)(0, 115, 114) */
		reached[0][115] = 1;
		;
		_m = 3; goto P999; /* 5 */
	case 172: // STATE 109 - client.pml:111 - [.(goto)] (0:114:0 - 2)
		IfNotBlocked
		reached[0][109] = 1;
		;
		/* merge: .(goto)(114, 112, 114) */
		reached[0][112] = 1;
		;
		/* merge: .(goto)(0, 115, 114) */
		reached[0][115] = 1;
		;
		_m = 3; goto P999; /* 2 */
	case 173: // STATE 107 - client.pml:109 - [cs = 1] (0:114:1 - 1)
		IfNotBlocked
		reached[0][107] = 1;
		(trpt+1)->bup.oval = ((int)now.cs);
		now.cs = 1;
#ifdef VAR_RANGES
		logval("cs", ((int)now.cs));
#endif
		;
		/* merge: .(goto)(114, 109, 114) */
		reached[0][109] = 1;
		;
		/* merge: .(goto)(114, 112, 114) */
		reached[0][112] = 1;
		;
		/* merge: .(goto)(0, 115, 114) */
		reached[0][115] = 1;
		;
		_m = 3; goto P999; /* 3 */
	case 174: // STATE 112 - client.pml:112 - [.(goto)] (0:114:0 - 2)
		IfNotBlocked
		reached[0][112] = 1;
		;
		/* merge: .(goto)(0, 115, 114) */
		reached[0][115] = 1;
		;
		_m = 3; goto P999; /* 1 */
	case 175: // STATE 117 - client.pml:114 - [-end-] (0:0:0 - 1)
		IfNotBlocked
		reached[0][117] = 1;
		if (!delproc(1, II)) continue;
		_m = 3; goto P999; /* 0 */
	case  _T5:	/* np_ */
		if (!((!(trpt->o_pm&4) && !(trpt->tau&128))))
			continue;
		/* else fall through */
	case  _T2:	/* true */
		_m = 3; goto P999;
#undef rand
	}

