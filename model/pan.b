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
		lock[1] = trpt->bup.ovals[8];
		lock[0] = trpt->bup.ovals[7];
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
		lock[1] = trpt->bup.ovals[3];
		lock[0] = trpt->bup.ovals[2];
		now.txa[1] = trpt->bup.ovals[1];
		now.txa[0] = trpt->bup.ovals[0];
		;
		ungrab_ints(trpt->bup.ovals, 4);
		goto R999;

	case 17: // STATE 25
		;
		lock[1] = trpt->bup.ovals[3];
		lock[0] = trpt->bup.ovals[2];
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
;
		;
		;
		;
		
	case 34: // STATE 173
		;
		((P2 *)_this)->acq = trpt->bup.ovals[15];
		((P2 *)_this)->lost = trpt->bup.ovals[14];
		((P2 *)_this)->rf = trpt->bup.ovals[13];
		((P2 *)_this)->fp = trpt->bup.ovals[12];
		((P2 *)_this)->e = trpt->bup.ovals[11];
		((P2 *)_this)->sc = trpt->bup.ovals[10];
		((P2 *)_this)->c = trpt->bup.ovals[9];
		((P2 *)_this)->t = trpt->bup.ovals[8];
		((P2 *)_this)->k = trpt->bup.ovals[7];
		((P2 *)_this)->s = trpt->bup.ovals[6];
		((P2 *)_this)->src = trpt->bup.ovals[5];
		now.txa[ Index(((P2 *)_this)->w, 2) ] = trpt->bup.ovals[4];
		now.wtok[ Index(((P2 *)_this)->w, 2) ] = trpt->bup.ovals[3];
		now.wkey[ Index(((P2 *)_this)->w, 2) ] = trpt->bup.ovals[2];
		now.wsrc[ Index(((P2 *)_this)->w, 2) ] = trpt->bup.ovals[1];
		now.kill[ Index(((P2 *)_this)->w, 2) ] = trpt->bup.ovals[0];
		;
		ungrab_ints(trpt->bup.ovals, 16);
		goto R999;
;
		;
		
	case 36: // STATE 9
		;
		now.ntok = trpt->bup.oval;
		;
		goto R999;

	case 37: // STATE 10
		;
		((P2 *)_this)->t = trpt->bup.oval;
		;
		goto R999;

	case 38: // STATE 11
		;
		now.wtok[ Index(((P2 *)_this)->w, 2) ] = trpt->bup.oval;
		;
		goto R999;
;
		;
		;
		;
		;
		;
		
	case 42: // STATE 18
		;
		now.rst[ Index(((P2 *)_this)->k, 2) ] = trpt->bup.oval;
		;
		goto R999;

	case 43: // STATE 19
		;
		now.rtok[ Index(((P2 *)_this)->k, 2) ] = trpt->bup.oval;
		;
		goto R999;

	case 44: // STATE 20
		;
		now.rsc[ Index(((P2 *)_this)->k, 2) ] = trpt->bup.oval;
		;
		goto R999;

	case 45: // STATE 21
		;
		now.rfp[ Index(((P2 *)_this)->k, 2) ] = trpt->bup.oval;
		;
		goto R999;

	case 46: // STATE 22
		;
		now.rlap[ Index(((P2 *)_this)->k, 2) ] = trpt->bup.oval;
		;
		goto R999;

	case 47: // STATE 25
		;
		((P2 *)_this)->c = trpt->bup.oval;
		;
		goto R999;

	case 48: // STATE 26
		;
		((P2 *)_this)->sc = trpt->bup.oval;
		;
		goto R999;

	case 49: // STATE 27
		;
		((P2 *)_this)->rf = trpt->bup.oval;
		;
		goto R999;

	case 50: // STATE 28
		;
		((P2 *)_this)->e = trpt->bup.oval;
		;
		goto R999;
;
		;
		;
		;
		
	case 53: // STATE 36
		;
		((P2 *)_this)->c = trpt->bup.oval;
		;
		goto R999;
;
		;
		
	case 55: // STATE 47
		;
		now.txa[ Index(((P2 *)_this)->w, 2) ] = trpt->bup.oval;
		;
		goto R999;
;
		;
		
	case 57: // STATE 50
		;
		now.rlap[ Index(((P2 *)_this)->k, 2) ] = trpt->bup.oval;
		;
		goto R999;
;
		;
		
	case 59: // STATE 53
		;
		((P2 *)_this)->lost = trpt->bup.oval;
		;
		goto R999;
;
		;
		
	case 61: // STATE 60
		;
	/* 0 */	((P2 *)_this)->lost = trpt->bup.oval;
		;
		;
		goto R999;

	case 62: // STATE 61
		;
		((P2 *)_this)->c = trpt->bup.oval;
		;
		goto R999;

	case 63: // STATE 62
		;
	/* 0 */	((P2 *)_this)->lost = trpt->bup.oval;
		;
		;
		goto R999;

	case 64: // STATE 63
		;
		((P2 *)_this)->c = trpt->bup.oval;
		;
		goto R999;

	case 65: // STATE 64
		;
	/* 0 */	((P2 *)_this)->lost = trpt->bup.oval;
		;
		;
		goto R999;

	case 66: // STATE 65
		;
		now.rst[ Index(((P2 *)_this)->k, 2) ] = trpt->bup.oval;
		;
		goto R999;

	case 67: // STATE 66
		;
		now.rtok[ Index(((P2 *)_this)->k, 2) ] = trpt->bup.oval;
		;
		goto R999;

	case 68: // STATE 67
		;
		now.rlap[ Index(((P2 *)_this)->k, 2) ] = trpt->bup.oval;
		;
		goto R999;
;
		;
		
	case 70: // STATE 69
		;
		now.commits[ Index(((P2 *)_this)->k, 2) ] = trpt->bup.oval;
		;
		goto R999;

	case 71: // STATE 70
		;
		now.committed[ Index(((P2 *)_this)->k, 2) ] = trpt->bup.oval;
		;
		goto R999;

	case 72: // STATE 71
		;
		now.dst[0] = trpt->bup.oval;
		;
		goto R999;

	case 73: // STATE 72
		;
		now.dtok[0] = trpt->bup.oval;
		;
		goto R999;

	case 74: // STATE 73
		;
		now.dsc[0] = trpt->bup.oval;
		;
		goto R999;

	case 75: // STATE 74
		;
		now.dfp[0] = trpt->bup.oval;
		;
		goto R999;

	case 76: // STATE 75
		;
		now.dlap[0] = trpt->bup.oval;
		;
		goto R999;

	case 77: // STATE 76
		;
		now.dst[1] = trpt->bup.oval;
		;
		goto R999;

	case 78: // STATE 77
		;
		now.dtok[1] = trpt->bup.oval;
		;
		goto R999;

	case 79: // STATE 78
		;
		now.dsc[1] = trpt->bup.oval;
		;
		goto R999;

	case 80: // STATE 79
		;
		now.dfp[1] = trpt->bup.oval;
		;
		goto R999;

	case 81: // STATE 80
		;
		now.dlap[1] = trpt->bup.oval;
		;
		goto R999;

	case 82: // STATE 81
		;
		((P2 *)_this)->c = trpt->bup.oval;
		;
		goto R999;

	case 83: // STATE 82
		;
		((P2 *)_this)->sc = trpt->bup.oval;
		;
		goto R999;

	case 84: // STATE 83
		;
		((P2 *)_this)->rf = trpt->bup.oval;
		;
		goto R999;

	case 85: // STATE 84
		;
		((P2 *)_this)->e = trpt->bup.oval;
		;
		goto R999;
;
		;
		
	case 87: // STATE 86
		;
	/* 0 */	((P2 *)_this)->lost = trpt->bup.oval;
		;
		;
		goto R999;

	case 88: // STATE 87
		;
		((P2 *)_this)->c = trpt->bup.oval;
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
		
	case 93: // STATE 97
		;
		now.txa[ Index(((P2 *)_this)->w, 2) ] = trpt->bup.oval;
		;
		goto R999;
;
		;
		
	case 95: // STATE 100
		;
	/* 0 */	((P2 *)_this)->t = trpt->bup.oval;
		;
		;
		goto R999;

	case 96: // STATE 101
		;
		now.rst[ Index(((P2 *)_this)->k, 2) ] = trpt->bup.oval;
		;
		goto R999;

	case 97: // STATE 102
		;
		now.rtok[ Index(((P2 *)_this)->k, 2) ] = trpt->bup.oval;
		;
		goto R999;

	case 98: // STATE 103
		;
		now.rsc[ Index(((P2 *)_this)->k, 2) ] = trpt->bup.oval;
		;
		goto R999;

	case 99: // STATE 104
		;
		now.rfp[ Index(((P2 *)_this)->k, 2) ] = trpt->bup.oval;
		;
		goto R999;

	case 100: // STATE 105
		;
		now.rlap[ Index(((P2 *)_this)->k, 2) ] = trpt->bup.oval;
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
		
	case 106: // STATE 124
		;
	/* 0 */	((P2 *)_this)->src = trpt->bup.oval;
		;
		;
		goto R999;
;
		;
		
	case 108: // STATE 126
		;
		_m = unsend(now.toOther);
		;
		goto R999;
;
		;
		
	case 110: // STATE 131
		;
		_m = unsend(now.toCli);
		;
		goto R999;
;
		;
		
	case 112: // STATE 133
		;
		now.nf = trpt->bup.oval;
		;
		goto R999;
;
		;
		
	case 114: // STATE 140
		;
		now.wsrc[ Index(((P2 *)_this)->w, 2) ] = trpt->bup.oval;
		;
		goto R999;

	case 115: // STATE 141
		;
		now.wkey[ Index(((P2 *)_this)->w, 2) ] = trpt->bup.oval;
		;
		goto R999;

	case 116: // STATE 142
		;
		now.wtok[ Index(((P2 *)_this)->w, 2) ] = trpt->bup.oval;
		;
		goto R999;

	case 117: // STATE 143
		;
		now.txa[ Index(((P2 *)_this)->w, 2) ] = trpt->bup.oval;
		;
		goto R999;

	case 118: // STATE 144
		;
		((P2 *)_this)->src = trpt->bup.oval;
		;
		goto R999;

	case 119: // STATE 145
		;
		((P2 *)_this)->s = trpt->bup.oval;
		;
		goto R999;

	case 120: // STATE 146
		;
		((P2 *)_this)->k = trpt->bup.oval;
		;
		goto R999;

	case 121: // STATE 147
		;
		((P2 *)_this)->t = trpt->bup.oval;
		;
		goto R999;

	case 122: // STATE 148
		;
		((P2 *)_this)->c = trpt->bup.oval;
		;
		goto R999;

	case 123: // STATE 149
		;
		((P2 *)_this)->sc = trpt->bup.oval;
		;
		goto R999;

	case 124: // STATE 150
		;
		((P2 *)_this)->e = trpt->bup.oval;
		;
		goto R999;

	case 125: // STATE 151
		;
		((P2 *)_this)->fp = trpt->bup.oval;
		;
		goto R999;

	case 126: // STATE 152
		;
		((P2 *)_this)->rf = trpt->bup.oval;
		;
		goto R999;

	case 127: // STATE 153
		;
		((P2 *)_this)->lost = trpt->bup.oval;
		;
		goto R999;

	case 128: // STATE 154
		;
		((P2 *)_this)->acq = trpt->bup.oval;
		;
		goto R999;

	case 129: // STATE 180
		;
		p_restor(II);
		;
		;
		goto R999;

		 /* PROC Other */

	case 130: // STATE 2
		;
		((P1 *)_this)->s = trpt->bup.oval;
		;
		goto R999;

	case 131: // STATE 3
		;
		_m = unsend(now.toSrv);
		;
		goto R999;

	case 132: // STATE 6
		;
		((P1 *)_this)->fp = trpt->bup.oval;
		;
		goto R999;

	case 133: // STATE 7
		;
		_m = unsend(now.toSrv);
		;
		goto R999;

	case 134: // STATE 11
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

	case 135: // STATE 12
		;
	/* 0 */	((P1 *)_this)->c = trpt->bup.oval;
		;
		;
		goto R999;
;
		;
		
	case 137: // STATE 18
		;
		p_restor(II);
		;
		;
		goto R999;

		 /* PROC Client */

	case 138: // STATE 2
		;
		now.started = trpt->bup.oval;
		;
		goto R999;

	case 139: // STATE 6
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
		
	case 142: // STATE 13
		;
		now.cs = trpt->bup.ovals[2];
		now.jd = trpt->bup.ovals[1];
		now.js = trpt->bup.ovals[0];
		;
		ungrab_ints(trpt->bup.ovals, 3);
		goto R999;
;
		
	case 143: // STATE 36
		goto R999;

	case 144: // STATE 34
		;
		now.cs = trpt->bup.ovals[1];
		now.sent = trpt->bup.ovals[0];
		_m = unsend(now.toSrv);
		;
		ungrab_ints(trpt->bup.ovals, 2);
		goto R999;

	case 145: // STATE 34
		;
		now.cs = trpt->bup.ovals[2];
		now.sent = trpt->bup.ovals[1];
		now.nf = trpt->bup.ovals[0];
		;
		ungrab_ints(trpt->bup.ovals, 3);
		goto R999;

	case 146: // STATE 22
		;
		now.nf = trpt->bup.oval;
		;
		goto R999;

	case 147: // STATE 23
		;
		_m = unsend(now.toSrv);
		;
		goto R999;

	case 148: // STATE 34
		;
		now.cs = trpt->bup.ovals[1];
		now.sent = trpt->bup.ovals[0];
		_m = unsend(now.toSrv);
		;
		ungrab_ints(trpt->bup.ovals, 2);
		goto R999;

	case 149: // STATE 27
		;
		now.nf = trpt->bup.oval;
		;
		goto R999;

	case 150: // STATE 34
		;
		now.cs = trpt->bup.ovals[1];
		now.sent = trpt->bup.ovals[0];
		_m = unsend(now.toCli);
		;
		ungrab_ints(trpt->bup.ovals, 2);
		goto R999;

	case 151: // STATE 34
		;
		now.cs = trpt->bup.ovals[1];
		now.sent = trpt->bup.ovals[0];
		;
		ungrab_ints(trpt->bup.ovals, 2);
		goto R999;

	case 152: // STATE 38
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
		
	case 154: // STATE 67
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

	case 155: // STATE 67
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

	case 156: // STATE 50
		;
	/* 0 */	((P0 *)_this)->c = trpt->bup.oval;
		;
		;
		goto R999;

	case 157: // STATE 67
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

	case 158: // STATE 67
		;
		((P0 *)_this)->e = trpt->bup.ovals[4];
		((P0 *)_this)->fp = trpt->bup.ovals[3];
		((P0 *)_this)->sc = trpt->bup.ovals[2];
		((P0 *)_this)->c = trpt->bup.ovals[1];
		now.cs = trpt->bup.ovals[0];
		;
		ungrab_ints(trpt->bup.ovals, 5);
		goto R999;

	case 159: // STATE 67
		;
		((P0 *)_this)->e = trpt->bup.ovals[3];
		((P0 *)_this)->fp = trpt->bup.ovals[2];
		((P0 *)_this)->sc = trpt->bup.ovals[1];
		((P0 *)_this)->c = trpt->bup.ovals[0];
		;
		ungrab_ints(trpt->bup.ovals, 4);
		goto R999;

	case 160: // STATE 70
		;
		now.cs = trpt->bup.oval;
		;
		goto R999;

	case 161: // STATE 74
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
		
	case 164: // STATE 81
		;
		now.cs = trpt->bup.ovals[2];
		now.jd = trpt->bup.ovals[1];
		now.js = trpt->bup.ovals[0];
		;
		ungrab_ints(trpt->bup.ovals, 3);
		goto R999;
;
		
	case 165: // STATE 89
		goto R999;

	case 166: // STATE 87
		;
		now.cs = trpt->bup.ovals[2];
		now.jd = trpt->bup.ovals[1];
		now.js = trpt->bup.ovals[0];
		;
		ungrab_ints(trpt->bup.ovals, 3);
		goto R999;

	case 167: // STATE 92
		;
		now.jd = trpt->bup.oval;
		;
		goto R999;

	case 168: // STATE 98
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
		
	case 171: // STATE 104
		;
		now.cs = trpt->bup.ovals[2];
		now.jd = trpt->bup.ovals[1];
		now.js = trpt->bup.ovals[0];
		;
		ungrab_ints(trpt->bup.ovals, 3);
		goto R999;
;
		
	case 172: // STATE 109
		goto R999;

	case 173: // STATE 107
		;
		now.cs = trpt->bup.oval;
		;
		goto R999;
;
		
	case 174: // STATE 112
		goto R999;

	case 175: // STATE 117
		;
		p_restor(II);
		;
		;
		goto R999;
	}

