	switch (t->back) {
	default: Uerror("bad return move");
	case  0: goto R999; /* nothing to undo */

		 /* CLAIM no_op_lost */
;
		;
		;
		;
		;
		;
		
	case 6: // STATE 22
		;
		p_restor(II);
		;
		;
		goto R999;

		 /* PROC :init: */

	case 7: // STATE 1
		;
		;
		delproc(0, now._nr_pr-1);
		;
		goto R999;

	case 8: // STATE 2
		;
		;
		delproc(0, now._nr_pr-1);
		;
		goto R999;

	case 9: // STATE 3
		;
		;
		delproc(0, now._nr_pr-1);
		;
		goto R999;

	case 10: // STATE 4
		;
		;
		delproc(0, now._nr_pr-1);
		;
		goto R999;

	case 11: // STATE 5
		;
		;
		delproc(0, now._nr_pr-1);
		;
		goto R999;

	case 12: // STATE 7
		;
		p_restor(II);
		;
		;
		goto R999;

		 /* PROC Env */

	case 13: // STATE 2
		;
		now.nf = trpt->bup.oval;
		;
		goto R999;

	case 14: // STATE 8
		;
		now.rlap[0] = trpt->bup.ovals[4];
		now.rfp[0] = trpt->bup.ovals[3];
		now.rsc[0] = trpt->bup.ovals[2];
		now.rtok[0] = trpt->bup.ovals[1];
		now.rst[0] = trpt->bup.ovals[0];
		;
		ungrab_ints(trpt->bup.ovals, 5);
		goto R999;

	case 15: // STATE 25
		;
		now.lock[1] = trpt->bup.ovals[8];
		now.lock[0] = trpt->bup.ovals[7];
		now.txa[1] = trpt->bup.ovals[6];
		now.txa[0] = trpt->bup.ovals[5];
		now.rlap[1] = trpt->bup.ovals[4];
		now.rfp[1] = trpt->bup.ovals[3];
		now.rsc[1] = trpt->bup.ovals[2];
		now.rtok[1] = trpt->bup.ovals[1];
		now.rst[1] = trpt->bup.ovals[0];
		;
		ungrab_ints(trpt->bup.ovals, 9);
		goto R999;

	case 16: // STATE 25
		;
		now.lock[1] = trpt->bup.ovals[3];
		now.lock[0] = trpt->bup.ovals[2];
		now.txa[1] = trpt->bup.ovals[1];
		now.txa[0] = trpt->bup.ovals[0];
		;
		ungrab_ints(trpt->bup.ovals, 4);
		goto R999;

	case 17: // STATE 25
		;
		now.lock[1] = trpt->bup.ovals[3];
		now.lock[0] = trpt->bup.ovals[2];
		now.txa[1] = trpt->bup.ovals[1];
		now.txa[0] = trpt->bup.ovals[0];
		;
		ungrab_ints(trpt->bup.ovals, 4);
		goto R999;

	case 18: // STATE 29
		;
		now.kill[0] = trpt->bup.ovals[1];
		now.nf = trpt->bup.ovals[0];
		;
		ungrab_ints(trpt->bup.ovals, 2);
		goto R999;

	case 19: // STATE 33
		;
		now.kill[1] = trpt->bup.ovals[1];
		now.nf = trpt->bup.ovals[0];
		;
		ungrab_ints(trpt->bup.ovals, 2);
		goto R999;
;
		;
		
	case 21: // STATE 43
		;
		now.rlap[0] = trpt->bup.ovals[1];
		now.nf = trpt->bup.ovals[0];
		;
		ungrab_ints(trpt->bup.ovals, 2);
		goto R999;

	case 22: // STATE 43
		;
		now.rlap[0] = trpt->bup.oval;
		;
		goto R999;

	case 23: // STATE 43
		;
		now.rlap[0] = trpt->bup.oval;
		;
		goto R999;
;
		;
		
	case 25: // STATE 54
		;
		now.rlap[1] = trpt->bup.ovals[1];
		now.nf = trpt->bup.ovals[0];
		;
		ungrab_ints(trpt->bup.ovals, 2);
		goto R999;

	case 26: // STATE 54
		;
		now.rlap[1] = trpt->bup.oval;
		;
		goto R999;

	case 27: // STATE 54
		;
		now.rlap[1] = trpt->bup.oval;
		;
		goto R999;

	case 28: // STATE 58
		;
		now.phase = trpt->bup.oval;
		;
		goto R999;

	case 29: // STATE 62
		;
		now.phase = trpt->bup.oval;
		;
		goto R999;

	case 30: // STATE 68
		;
		p_restor(II);
		;
		;
		goto R999;

		 /* PROC Worker */

	case 31: // STATE 4
		;
		now.wkey[ Index(((P2 *)_this)->w, 2) ] = trpt->bup.ovals[6];
		((P2 *)_this)->k = trpt->bup.ovals[5];
		now.wsrc[ Index(((P2 *)_this)->w, 2) ] = trpt->bup.ovals[4];
		XX = trpt->bup.ovals[0];
		unrecv(now.toSrv, XX-1, 0, ((int)((P2 *)_this)->src), 1);
		unrecv(now.toSrv, XX-1, 1, ((int)((P2 *)_this)->s), 0);
		unrecv(now.toSrv, XX-1, 2, ((int)((P2 *)_this)->fp), 0);
		((P2 *)_this)->src = trpt->bup.ovals[1];
		((P2 *)_this)->s = trpt->bup.ovals[2];
		((P2 *)_this)->fp = trpt->bup.ovals[3];
		;
		;
		ungrab_ints(trpt->bup.ovals, 7);
		goto R999;

	case 32: // STATE 7
		;
		now.txa[ Index(((P2 *)_this)->w, 2) ] = trpt->bup.oval;
		;
		goto R999;
;
		;
		
	case 34: // STATE 134
		;
		now.txa[ Index(((P2 *)_this)->w, 2) ] = trpt->bup.ovals[3];
		now.wkey[ Index(((P2 *)_this)->w, 2) ] = trpt->bup.ovals[2];
		now.wsrc[ Index(((P2 *)_this)->w, 2) ] = trpt->bup.ovals[1];
		now.kill[ Index(((P2 *)_this)->w, 2) ] = trpt->bup.ovals[0];
		;
		ungrab_ints(trpt->bup.ovals, 4);
		goto R999;

	case 35: // STATE 148
		;
		((P2 *)_this)->rf = trpt->bup.ovals[9];
		((P2 *)_this)->fp = trpt->bup.ovals[8];
		((P2 *)_this)->e = trpt->bup.ovals[7];
		((P2 *)_this)->sc = trpt->bup.ovals[6];
		((P2 *)_this)->c = trpt->bup.ovals[5];
		((P2 *)_this)->t = trpt->bup.ovals[4];
		((P2 *)_this)->k = trpt->bup.ovals[3];
		((P2 *)_this)->s = trpt->bup.ovals[2];
		((P2 *)_this)->src = trpt->bup.ovals[1];
		now.lock[ Index(((P2 *)_this)->k, 2) ] = trpt->bup.ovals[0];
		;
		ungrab_ints(trpt->bup.ovals, 10);
		goto R999;

	case 36: // STATE 148
		;
		((P2 *)_this)->rf = trpt->bup.ovals[8];
		((P2 *)_this)->fp = trpt->bup.ovals[7];
		((P2 *)_this)->e = trpt->bup.ovals[6];
		((P2 *)_this)->sc = trpt->bup.ovals[5];
		((P2 *)_this)->c = trpt->bup.ovals[4];
		((P2 *)_this)->t = trpt->bup.ovals[3];
		((P2 *)_this)->k = trpt->bup.ovals[2];
		((P2 *)_this)->s = trpt->bup.ovals[1];
		((P2 *)_this)->src = trpt->bup.ovals[0];
		;
		ungrab_ints(trpt->bup.ovals, 9);
		goto R999;
;
		;
		
	case 38: // STATE 9
		;
		((P2 *)_this)->c = trpt->bup.oval;
		;
		goto R999;
;
		;
		
	case 40: // STATE 11
		;
		((P2 *)_this)->c = trpt->bup.oval;
		;
		goto R999;
;
		;
		
	case 42: // STATE 13
		;
		now.lock[ Index(((P2 *)_this)->k, 2) ] = trpt->bup.oval;
		;
		goto R999;
;
		;
		;
		;
		;
		;
		;
		;
		
	case 47: // STATE 21
		;
		((P2 *)_this)->c = trpt->bup.oval;
		;
		goto R999;

	case 48: // STATE 22
		;
		((P2 *)_this)->sc = trpt->bup.oval;
		;
		goto R999;

	case 49: // STATE 23
		;
		((P2 *)_this)->rf = trpt->bup.oval;
		;
		goto R999;

	case 50: // STATE 24
		;
		((P2 *)_this)->e = trpt->bup.oval;
		;
		goto R999;

	case 51: // STATE 30
		;
		((P2 *)_this)->c = trpt->bup.oval;
		;
		goto R999;

	case 52: // STATE 37
		;
	/* 0 */	((P2 *)_this)->c = trpt->bup.oval;
		;
		;
		goto R999;
;
		;
		;
		;
		;
		;
		
	case 56: // STATE 42
		;
		now.ntok = trpt->bup.oval;
		;
		goto R999;

	case 57: // STATE 43
		;
		((P2 *)_this)->t = trpt->bup.oval;
		;
		goto R999;

	case 58: // STATE 44
		;
		now.rst[ Index(((P2 *)_this)->k, 2) ] = trpt->bup.oval;
		;
		goto R999;

	case 59: // STATE 45
		;
		now.rtok[ Index(((P2 *)_this)->k, 2) ] = trpt->bup.oval;
		;
		goto R999;

	case 60: // STATE 46
		;
		now.rsc[ Index(((P2 *)_this)->k, 2) ] = trpt->bup.oval;
		;
		goto R999;

	case 61: // STATE 47
		;
		now.rfp[ Index(((P2 *)_this)->k, 2) ] = trpt->bup.oval;
		;
		goto R999;

	case 62: // STATE 48
		;
		now.rlap[ Index(((P2 *)_this)->k, 2) ] = trpt->bup.oval;
		;
		goto R999;
;
		;
		
	case 64: // STATE 50
		;
		now.commits[ Index(((P2 *)_this)->k, 2) ] = trpt->bup.oval;
		;
		goto R999;

	case 65: // STATE 51
		;
		now.committed[ Index(((P2 *)_this)->k, 2) ] = trpt->bup.oval;
		;
		goto R999;

	case 66: // STATE 52
		;
		now.dst[0] = trpt->bup.oval;
		;
		goto R999;

	case 67: // STATE 53
		;
		now.dtok[0] = trpt->bup.oval;
		;
		goto R999;

	case 68: // STATE 54
		;
		now.dsc[0] = trpt->bup.oval;
		;
		goto R999;

	case 69: // STATE 55
		;
		now.dfp[0] = trpt->bup.oval;
		;
		goto R999;

	case 70: // STATE 56
		;
		now.dlap[0] = trpt->bup.oval;
		;
		goto R999;

	case 71: // STATE 57
		;
		now.dst[1] = trpt->bup.oval;
		;
		goto R999;

	case 72: // STATE 58
		;
		now.dtok[1] = trpt->bup.oval;
		;
		goto R999;

	case 73: // STATE 59
		;
		now.dsc[1] = trpt->bup.oval;
		;
		goto R999;

	case 74: // STATE 60
		;
		now.dfp[1] = trpt->bup.oval;
		;
		goto R999;

	case 75: // STATE 61
		;
		now.dlap[1] = trpt->bup.oval;
		;
		goto R999;

	case 76: // STATE 62
		;
		((P2 *)_this)->c = trpt->bup.oval;
		;
		goto R999;

	case 77: // STATE 63
		;
		((P2 *)_this)->sc = trpt->bup.oval;
		;
		goto R999;

	case 78: // STATE 64
		;
		((P2 *)_this)->rf = trpt->bup.oval;
		;
		goto R999;

	case 79: // STATE 65
		;
		((P2 *)_this)->e = trpt->bup.oval;
		;
		goto R999;
;
		;
		;
		;
		
	case 82: // STATE 68
		;
		((P2 *)_this)->c = trpt->bup.oval;
		;
		goto R999;
;
		;
		;
		;
		
	case 85: // STATE 71
		;
		((P2 *)_this)->c = trpt->bup.oval;
		;
		goto R999;
;
		;
		
	case 87: // STATE 75
		;
		now.txa[ Index(((P2 *)_this)->w, 2) ] = trpt->bup.oval;
		;
		goto R999;
;
		;
		
	case 89: // STATE 77
		;
		now.lock[ Index(((P2 *)_this)->k, 2) ] = trpt->bup.oval;
		;
		goto R999;

	case 90: // STATE 83
		;
		now.txa[ Index(((P2 *)_this)->w, 2) ] = trpt->bup.oval;
		;
		goto R999;
;
		;
		
	case 92: // STATE 85
		;
		now.lock[ Index(((P2 *)_this)->k, 2) ] = trpt->bup.oval;
		;
		goto R999;
;
		;
		;
		;
		;
		;
		;
		;
		;
		;
		
	case 98: // STATE 100
		;
	/* 0 */	((P2 *)_this)->src = trpt->bup.oval;
		;
		;
		goto R999;
;
		;
		
	case 100: // STATE 102
		;
		_m = unsend(now.toOther);
		;
		goto R999;
;
		;
		
	case 102: // STATE 107
		;
		_m = unsend(now.toCli);
		;
		goto R999;
;
		;
		
	case 104: // STATE 109
		;
		now.nf = trpt->bup.oval;
		;
		goto R999;
;
		;
		
	case 106: // STATE 116
		;
		now.wsrc[ Index(((P2 *)_this)->w, 2) ] = trpt->bup.oval;
		;
		goto R999;

	case 107: // STATE 117
		;
		now.wkey[ Index(((P2 *)_this)->w, 2) ] = trpt->bup.oval;
		;
		goto R999;

	case 108: // STATE 118
		;
		now.txa[ Index(((P2 *)_this)->w, 2) ] = trpt->bup.oval;
		;
		goto R999;

	case 109: // STATE 119
		;
		((P2 *)_this)->src = trpt->bup.oval;
		;
		goto R999;

	case 110: // STATE 120
		;
		((P2 *)_this)->s = trpt->bup.oval;
		;
		goto R999;

	case 111: // STATE 121
		;
		((P2 *)_this)->k = trpt->bup.oval;
		;
		goto R999;

	case 112: // STATE 122
		;
		((P2 *)_this)->t = trpt->bup.oval;
		;
		goto R999;

	case 113: // STATE 123
		;
		((P2 *)_this)->c = trpt->bup.oval;
		;
		goto R999;

	case 114: // STATE 124
		;
		((P2 *)_this)->sc = trpt->bup.oval;
		;
		goto R999;

	case 115: // STATE 125
		;
		((P2 *)_this)->e = trpt->bup.oval;
		;
		goto R999;

	case 116: // STATE 126
		;
		((P2 *)_this)->fp = trpt->bup.oval;
		;
		goto R999;

	case 117: // STATE 127
		;
		((P2 *)_this)->rf = trpt->bup.oval;
		;
		goto R999;

	case 118: // STATE 155
		;
		p_restor(II);
		;
		;
		goto R999;

		 /* PROC Other */

	case 119: // STATE 2
		;
		((P1 *)_this)->s = trpt->bup.oval;
		;
		goto R999;

	case 120: // STATE 3
		;
		_m = unsend(now.toSrv);
		;
		goto R999;

	case 121: // STATE 6
		;
		((P1 *)_this)->fp = trpt->bup.oval;
		;
		goto R999;

	case 122: // STATE 7
		;
		_m = unsend(now.toSrv);
		;
		goto R999;

	case 123: // STATE 11
		;
		XX = 1;
		unrecv(now.toOther, XX-1, 0, ((int)((P1 *)_this)->c), 1);
		unrecv(now.toOther, XX-1, 1, ((int)((P1 *)_this)->sc), 0);
		unrecv(now.toOther, XX-1, 2, ((int)((P1 *)_this)->afp), 0);
		unrecv(now.toOther, XX-1, 3, ((int)((P1 *)_this)->e), 0);
		((P1 *)_this)->c = trpt->bup.ovals[0];
		((P1 *)_this)->sc = trpt->bup.ovals[1];
		((P1 *)_this)->afp = trpt->bup.ovals[2];
		((P1 *)_this)->e = trpt->bup.ovals[3];
		;
		;
		ungrab_ints(trpt->bup.ovals, 4);
		goto R999;

	case 124: // STATE 12
		;
	/* 0 */	((P1 *)_this)->c = trpt->bup.oval;
		;
		;
		goto R999;
;
		;
		
	case 126: // STATE 18
		;
		p_restor(II);
		;
		;
		goto R999;

		 /* PROC Client */

	case 127: // STATE 2
		;
		now.started = trpt->bup.oval;
		;
		goto R999;

	case 128: // STATE 6
		;
		now.cs = trpt->bup.ovals[2];
		now.jd = trpt->bup.ovals[1];
		now.js = trpt->bup.ovals[0];
		;
		ungrab_ints(trpt->bup.ovals, 3);
		goto R999;
;
		;
		;
		;
		
	case 131: // STATE 13
		;
		now.cs = trpt->bup.ovals[2];
		now.jd = trpt->bup.ovals[1];
		now.js = trpt->bup.ovals[0];
		;
		ungrab_ints(trpt->bup.ovals, 3);
		goto R999;
;
		
	case 132: // STATE 36
		goto R999;

	case 133: // STATE 34
		;
		now.cs = trpt->bup.ovals[1];
		now.sent = trpt->bup.ovals[0];
		_m = unsend(now.toSrv);
		;
		ungrab_ints(trpt->bup.ovals, 2);
		goto R999;

	case 134: // STATE 34
		;
		now.cs = trpt->bup.ovals[2];
		now.sent = trpt->bup.ovals[1];
		now.nf = trpt->bup.ovals[0];
		;
		ungrab_ints(trpt->bup.ovals, 3);
		goto R999;

	case 135: // STATE 22
		;
		now.nf = trpt->bup.oval;
		;
		goto R999;

	case 136: // STATE 23
		;
		_m = unsend(now.toSrv);
		;
		goto R999;

	case 137: // STATE 34
		;
		now.cs = trpt->bup.ovals[1];
		now.sent = trpt->bup.ovals[0];
		_m = unsend(now.toSrv);
		;
		ungrab_ints(trpt->bup.ovals, 2);
		goto R999;

	case 138: // STATE 27
		;
		now.nf = trpt->bup.oval;
		;
		goto R999;

	case 139: // STATE 34
		;
		now.cs = trpt->bup.ovals[1];
		now.sent = trpt->bup.ovals[0];
		_m = unsend(now.toCli);
		;
		ungrab_ints(trpt->bup.ovals, 2);
		goto R999;

	case 140: // STATE 34
		;
		now.cs = trpt->bup.ovals[1];
		now.sent = trpt->bup.ovals[0];
		;
		ungrab_ints(trpt->bup.ovals, 2);
		goto R999;

	case 141: // STATE 38
		;
		XX = 1;
		unrecv(now.toCli, XX-1, 0, ((int)((P0 *)_this)->c), 1);
		unrecv(now.toCli, XX-1, 1, ((int)((P0 *)_this)->sc), 0);
		unrecv(now.toCli, XX-1, 2, ((int)((P0 *)_this)->fp), 0);
		unrecv(now.toCli, XX-1, 3, ((int)((P0 *)_this)->e), 0);
		((P0 *)_this)->c = trpt->bup.ovals[0];
		((P0 *)_this)->sc = trpt->bup.ovals[1];
		((P0 *)_this)->fp = trpt->bup.ovals[2];
		((P0 *)_this)->e = trpt->bup.ovals[3];
		;
		;
		ungrab_ints(trpt->bup.ovals, 4);
		goto R999;
;
		;
		
	case 143: // STATE 67
		;
		((P0 *)_this)->e = trpt->bup.ovals[6];
		((P0 *)_this)->fp = trpt->bup.ovals[5];
		((P0 *)_this)->sc = trpt->bup.ovals[4];
		((P0 *)_this)->c = trpt->bup.ovals[3];
		now.cs = trpt->bup.ovals[2];
		now.js = trpt->bup.ovals[1];
	/* 0 */	((P0 *)_this)->c = trpt->bup.ovals[0];
		;
		;
		ungrab_ints(trpt->bup.ovals, 7);
		goto R999;

	case 144: // STATE 67
		;
		((P0 *)_this)->e = trpt->bup.ovals[6];
		((P0 *)_this)->fp = trpt->bup.ovals[5];
		((P0 *)_this)->sc = trpt->bup.ovals[4];
		((P0 *)_this)->c = trpt->bup.ovals[3];
		now.cs = trpt->bup.ovals[2];
		now.js = trpt->bup.ovals[1];
	/* 0 */	((P0 *)_this)->c = trpt->bup.ovals[0];
		;
		;
		ungrab_ints(trpt->bup.ovals, 7);
		goto R999;

	case 145: // STATE 50
		;
	/* 0 */	((P0 *)_this)->c = trpt->bup.oval;
		;
		;
		goto R999;

	case 146: // STATE 67
		;
		((P0 *)_this)->e = trpt->bup.ovals[6];
		((P0 *)_this)->fp = trpt->bup.ovals[5];
		((P0 *)_this)->sc = trpt->bup.ovals[4];
		((P0 *)_this)->c = trpt->bup.ovals[3];
		now.cs = trpt->bup.ovals[2];
		now.jd = trpt->bup.ovals[1];
		now.js = trpt->bup.ovals[0];
		;
		ungrab_ints(trpt->bup.ovals, 7);
		goto R999;

	case 147: // STATE 67
		;
		((P0 *)_this)->e = trpt->bup.ovals[4];
		((P0 *)_this)->fp = trpt->bup.ovals[3];
		((P0 *)_this)->sc = trpt->bup.ovals[2];
		((P0 *)_this)->c = trpt->bup.ovals[1];
		now.cs = trpt->bup.ovals[0];
		;
		ungrab_ints(trpt->bup.ovals, 5);
		goto R999;

	case 148: // STATE 67
		;
		((P0 *)_this)->e = trpt->bup.ovals[3];
		((P0 *)_this)->fp = trpt->bup.ovals[2];
		((P0 *)_this)->sc = trpt->bup.ovals[1];
		((P0 *)_this)->c = trpt->bup.ovals[0];
		;
		ungrab_ints(trpt->bup.ovals, 4);
		goto R999;

	case 149: // STATE 70
		;
		now.cs = trpt->bup.oval;
		;
		goto R999;

	case 150: // STATE 74
		;
		now.cs = trpt->bup.ovals[1];
		now.nf = trpt->bup.ovals[0];
		;
		ungrab_ints(trpt->bup.ovals, 2);
		goto R999;
;
		;
		;
		;
		
	case 153: // STATE 81
		;
		now.cs = trpt->bup.ovals[2];
		now.jd = trpt->bup.ovals[1];
		now.js = trpt->bup.ovals[0];
		;
		ungrab_ints(trpt->bup.ovals, 3);
		goto R999;
;
		
	case 154: // STATE 89
		goto R999;

	case 155: // STATE 87
		;
		now.cs = trpt->bup.ovals[2];
		now.jd = trpt->bup.ovals[1];
		now.js = trpt->bup.ovals[0];
		;
		ungrab_ints(trpt->bup.ovals, 3);
		goto R999;

	case 156: // STATE 92
		;
		now.jd = trpt->bup.oval;
		;
		goto R999;

	case 157: // STATE 98
		;
		now.cs = trpt->bup.ovals[2];
		now.js = trpt->bup.ovals[1];
		now.nf = trpt->bup.ovals[0];
		;
		ungrab_ints(trpt->bup.ovals, 3);
		goto R999;
;
		;
		;
		;
		
	case 160: // STATE 104
		;
		now.cs = trpt->bup.ovals[2];
		now.jd = trpt->bup.ovals[1];
		now.js = trpt->bup.ovals[0];
		;
		ungrab_ints(trpt->bup.ovals, 3);
		goto R999;
;
		
	case 161: // STATE 109
		goto R999;

	case 162: // STATE 107
		;
		now.cs = trpt->bup.oval;
		;
		goto R999;
;
		
	case 163: // STATE 112
		goto R999;

	case 164: // STATE 117
		;
		p_restor(II);
		;
		;
		goto R999;
	}

