#ifdef PEG
struct T_SRC {
	char *fl; int ln;
} T_SRC[NTRANS];

void
tr_2_src(int m, char *file, int ln)
{	T_SRC[m].fl = file;
	T_SRC[m].ln = ln;
}

void
putpeg(int n, int m)
{	printf("%5d	trans %4d ", m, n);
	printf("%s:%d\n",
		T_SRC[n].fl, T_SRC[n].ln);
}
#endif

void
settable(void)
{	Trans *T;
	Trans *settr(int, int, int, int, int, char *, int, int, int);

	trans = (Trans ***) emalloc(7*sizeof(Trans **));

	/* proctype 5: no_op_lost */

	trans[5] = (Trans **) emalloc(23*sizeof(Trans *));

	trans[5][8]	= settr(397,0,7,1,0,".(goto)", 0, 2, 0);
	T = trans[5][7] = settr(396,0,0,0,0,"DO", 0, 2, 0);
	T = T->nxt	= settr(396,0,1,0,0,"DO", 0, 2, 0);
	T = T->nxt	= settr(396,0,3,0,0,"DO", 0, 2, 0);
	    T->nxt	= settr(396,0,5,0,0,"DO", 0, 2, 0);
	trans[5][1]	= settr(390,0,12,3,0,"((!(!(sent))&&!(((((jd==3)||(jd==4))||(jd==2))||(jd==5)))))", 1, 2, 0);
	trans[5][2]	= settr(391,0,12,1,0,"goto accept_S3", 0, 2, 0);
	trans[5][3]	= settr(392,0,19,4,0,"(!(!(sent)))", 1, 2, 0);
	trans[5][4]	= settr(393,0,19,1,0,"goto T0_S3", 0, 2, 0);
	trans[5][5]	= settr(394,0,7,1,0,"(1)", 0, 2, 0);
	trans[5][6]	= settr(395,0,7,1,0,"goto T0_init", 0, 2, 0);
	trans[5][9]	= settr(398,0,12,1,0,"break", 0, 2, 0);
	trans[5][13]	= settr(402,0,12,1,0,".(goto)", 0, 2, 0);
	T = trans[5][12] = settr(401,0,0,0,0,"DO", 0, 2, 0);
	    T->nxt	= settr(401,0,10,0,0,"DO", 0, 2, 0);
	trans[5][10]	= settr(399,0,19,1,0,"(1)", 0, 2, 0);
	trans[5][11]	= settr(400,0,19,1,0,"goto T0_S3", 0, 2, 0);
	trans[5][14]	= settr(403,0,19,1,0,"break", 0, 2, 0);
	trans[5][20]	= settr(409,0,19,1,0,".(goto)", 0, 2, 0);
	T = trans[5][19] = settr(408,0,0,0,0,"DO", 0, 2, 0);
	T = T->nxt	= settr(408,0,15,0,0,"DO", 0, 2, 0);
	    T->nxt	= settr(408,0,17,0,0,"DO", 0, 2, 0);
	trans[5][15]	= settr(404,0,12,5,0,"(!(((((jd==3)||(jd==4))||(jd==2))||(jd==5))))", 1, 2, 0);
	trans[5][16]	= settr(405,0,12,1,0,"goto accept_S3", 0, 2, 0);
	trans[5][17]	= settr(406,0,19,1,0,"(1)", 0, 2, 0);
	trans[5][18]	= settr(407,0,19,1,0,"goto T0_S3", 0, 2, 0);
	trans[5][21]	= settr(410,0,22,1,0,"break", 0, 2, 0);
	trans[5][22]	= settr(411,0,0,6,6,"-end-", 0, 3500, 0);

	/* proctype 4: :init: */

	trans[4] = (Trans **) emalloc(8*sizeof(Trans *));

	T = trans[ 4][6] = settr(388,2,0,0,0,"ATOMIC", 0, 2, 0);
	T->nxt	= settr(388,2,1,0,0,"ATOMIC", 0, 2, 0);
	trans[4][1]	= settr(383,2,2,7,7,"(run Client())", 0, 2, 0);
	trans[4][2]	= settr(384,2,3,8,8,"(run Other())", 0, 2, 0);
	trans[4][3]	= settr(385,2,4,9,9,"(run Worker(0))", 0, 2, 0);
	trans[4][4]	= settr(386,2,5,10,10,"(run Worker(1))", 0, 2, 0);
	trans[4][5]	= settr(387,0,7,11,11,"(run Env())", 0, 2, 0);
	trans[4][7]	= settr(389,0,0,12,12,"-end-", 0, 3500, 0);

	/* proctype 3: Env */

	trans[3] = (Trans **) emalloc(69*sizeof(Trans *));

	trans[3][66]	= settr(380,0,65,1,0,".(goto)", 0, 2, 0);
	T = trans[3][65] = settr(379,0,0,0,0,"DO", 0, 2, 0);
	T = T->nxt	= settr(379,0,26,0,0,"DO", 0, 2, 0);
	T = T->nxt	= settr(379,0,30,0,0,"DO", 0, 2, 0);
	T = T->nxt	= settr(379,0,34,0,0,"DO", 0, 2, 0);
	T = T->nxt	= settr(379,0,45,0,0,"DO", 0, 2, 0);
	T = T->nxt	= settr(379,0,56,0,0,"DO", 0, 2, 0);
	T = T->nxt	= settr(379,0,60,0,0,"DO", 0, 2, 0);
	    T->nxt	= settr(379,0,64,0,0,"DO", 0, 2, 0);
	T = trans[ 3][26] = settr(340,2,0,0,0,"ATOMIC", 1, 2, 0);
	T->nxt	= settr(340,2,1,0,0,"ATOMIC", 1, 2, 0);
	trans[3][1]	= settr(315,2,11,13,13,"((1&&((nf<3)&&!(calm))))", 1, 2, 0); /* m: 2 -> 11,0 */
	reached3[2] = 1;
	trans[3][2]	= settr(0,0,0,0,0,"nf = (nf+1)",0,0,0);
	trans[3][3]	= settr(0,0,0,0,0,"printf('the database restarts\\n')",0,0,0);
	T = trans[3][11] = settr(325,2,0,0,0,"IF", 1, 2, 0);
	T = T->nxt	= settr(325,2,9,0,0,"IF", 1, 2, 0);
	    T->nxt	= settr(325,2,10,0,0,"IF", 1, 2, 0);
	T = trans[ 3][9] = settr(323,0,0,0,0,"sub-sequence", 1, 2, 0);
	T->nxt	= settr(323,0,4,0,0,"sub-sequence", 1, 2, 0);
	trans[3][4]	= settr(318,2,20,14,14,"rst[0] = dst[0]", 1, 2, 0); /* m: 5 -> 0,20 */
	reached3[5] = 1;
	trans[3][5]	= settr(0,0,0,0,0,"rtok[0] = dtok[0]",0,0,0);
	trans[3][6]	= settr(0,0,0,0,0,"rsc[0] = dsc[0]",0,0,0);
	trans[3][7]	= settr(0,0,0,0,0,"rfp[0] = dfp[0]",0,0,0);
	trans[3][8]	= settr(0,0,0,0,0,"rlap[0] = dlap[0]",0,0,0);
	trans[3][12]	= settr(326,2,20,1,0,".(goto)", 1, 2, 0);
	trans[3][10]	= settr(324,2,20,1,0,"(1)", 1, 2, 0);
	T = trans[3][20] = settr(334,2,0,0,0,"IF", 1, 2, 0);
	T = T->nxt	= settr(334,2,18,0,0,"IF", 1, 2, 0);
	    T->nxt	= settr(334,2,19,0,0,"IF", 1, 2, 0);
	T = trans[ 3][18] = settr(332,0,0,0,0,"sub-sequence", 1, 2, 0);
	T->nxt	= settr(332,0,13,0,0,"sub-sequence", 1, 2, 0);
	trans[3][13]	= settr(327,0,65,15,15,"rst[1] = dst[1]", 1, 2, 0); /* m: 14 -> 0,65 */
	reached3[14] = 1;
	trans[3][14]	= settr(0,0,0,0,0,"rtok[1] = dtok[1]",0,0,0);
	trans[3][15]	= settr(0,0,0,0,0,"rsc[1] = dsc[1]",0,0,0);
	trans[3][16]	= settr(0,0,0,0,0,"rfp[1] = dfp[1]",0,0,0);
	trans[3][17]	= settr(0,0,0,0,0,"rlap[1] = dlap[1]",0,0,0);
	trans[3][21]	= settr(335,2,22,1,0,".(goto)", 1, 2, 0); /* m: 22 -> 0,65 */
	reached3[22] = 1;
	trans[3][19]	= settr(333,0,65,16,16,"(1)", 1, 2, 0); /* m: 22 -> 65,0 */
	reached3[22] = 1;
	trans[3][22]	= settr(336,0,65,17,17,"txa[0] = 0", 1, 2, 0); /* m: 23 -> 0,65 */
	reached3[23] = 1;
	trans[3][23]	= settr(0,0,0,0,0,"txa[1] = 0",0,0,0);
	trans[3][24]	= settr(0,0,0,0,0,"lock[0] = 0",0,0,0);
	trans[3][25]	= settr(0,0,0,0,0,"lock[1] = 0",0,0,0);
	T = trans[ 3][30] = settr(344,2,0,0,0,"ATOMIC", 1, 2, 0);
	T->nxt	= settr(344,2,27,0,0,"ATOMIC", 1, 2, 0);
	trans[3][27]	= settr(341,0,65,18,18,"((((1&&((nf<3)&&!(calm)))&&(wsrc[0]!=0))&&!(kill[0])))", 1, 2, 0); /* m: 28 -> 65,0 */
	reached3[28] = 1;
	trans[3][28]	= settr(0,0,0,0,0,"nf = (nf+1)",0,0,0);
	trans[3][29]	= settr(0,0,0,0,0,"kill[0] = 1",0,0,0);
	T = trans[ 3][34] = settr(348,2,0,0,0,"ATOMIC", 1, 2, 0);
	T->nxt	= settr(348,2,31,0,0,"ATOMIC", 1, 2, 0);
	trans[3][31]	= settr(345,0,65,19,19,"((((1&&((nf<3)&&!(calm)))&&(wsrc[1]!=0))&&!(kill[1])))", 1, 2, 0); /* m: 32 -> 65,0 */
	reached3[32] = 1;
	trans[3][32]	= settr(0,0,0,0,0,"nf = (nf+1)",0,0,0);
	trans[3][33]	= settr(0,0,0,0,0,"kill[1] = 1",0,0,0);
	T = trans[ 3][45] = settr(359,2,0,0,0,"ATOMIC", 1, 2, 0);
	T->nxt	= settr(359,2,35,0,0,"ATOMIC", 1, 2, 0);
	trans[3][35]	= settr(349,2,44,20,0,"((((rst[0]==1)&&!(rlap[0]))&&(!(((((wsrc[0]!=0)&&(wkey[0]==0))&&(wtok[0]==rtok[0]))||(((wsrc[1]!=0)&&(wkey[1]==0))&&(wtok[1]==rtok[0]))))||(1&&((nf<3)&&!(calm))))))", 1, 2, 0);
	T = trans[ 3][44] = settr(358,0,0,0,0,"sub-sequence", 1, 2, 0);
	T->nxt	= settr(358,0,41,0,0,"sub-sequence", 1, 2, 0);
	T = trans[3][41] = settr(355,2,0,0,0,"IF", 1, 2, 0);
	T = T->nxt	= settr(355,2,36,0,0,"IF", 1, 2, 0);
	    T->nxt	= settr(355,2,39,0,0,"IF", 1, 2, 0);
	trans[3][36]	= settr(350,0,65,21,21,"(((((wsrc[0]!=0)&&(wkey[0]==0))&&(wtok[0]==rtok[0]))||(((wsrc[1]!=0)&&(wkey[1]==0))&&(wtok[1]==rtok[0]))))", 1, 2, 0); /* m: 37 -> 65,0 */
	reached3[37] = 1;
	trans[3][37]	= settr(0,0,0,0,0,"nf = (nf+1)",0,0,0);
	trans[3][38]	= settr(0,0,0,0,0,"printf('the lease of token %d lapses: its worker is paused\\n',rtok[0])",0,0,0);
	trans[3][42]	= settr(356,0,65,22,22,".(goto)", 1, 2, 0); /* m: 43 -> 0,65 */
	reached3[43] = 1;
	trans[3][39]	= settr(353,2,40,2,0,"else", 1, 2, 0);
	trans[3][40]	= settr(354,0,65,23,23,"printf('the lease of token %d lapses: no live worker holds it\\n',rtok[0])", 1, 2, 0); /* m: 42 -> 0,65 */
	reached3[42] = 1;
	trans[3][43]	= settr(0,0,0,0,0,"rlap[0] = 1",0,0,0);
	T = trans[ 3][56] = settr(370,2,0,0,0,"ATOMIC", 1, 2, 0);
	T->nxt	= settr(370,2,46,0,0,"ATOMIC", 1, 2, 0);
	trans[3][46]	= settr(360,2,55,24,0,"((((rst[1]==1)&&!(rlap[1]))&&(!(((((wsrc[0]!=0)&&(wkey[0]==1))&&(wtok[0]==rtok[1]))||(((wsrc[1]!=0)&&(wkey[1]==1))&&(wtok[1]==rtok[1]))))||(1&&((nf<3)&&!(calm))))))", 1, 2, 0);
	T = trans[ 3][55] = settr(369,0,0,0,0,"sub-sequence", 1, 2, 0);
	T->nxt	= settr(369,0,52,0,0,"sub-sequence", 1, 2, 0);
	T = trans[3][52] = settr(366,2,0,0,0,"IF", 1, 2, 0);
	T = T->nxt	= settr(366,2,47,0,0,"IF", 1, 2, 0);
	    T->nxt	= settr(366,2,50,0,0,"IF", 1, 2, 0);
	trans[3][47]	= settr(361,0,65,25,25,"(((((wsrc[0]!=0)&&(wkey[0]==1))&&(wtok[0]==rtok[1]))||(((wsrc[1]!=0)&&(wkey[1]==1))&&(wtok[1]==rtok[1]))))", 1, 2, 0); /* m: 48 -> 65,0 */
	reached3[48] = 1;
	trans[3][48]	= settr(0,0,0,0,0,"nf = (nf+1)",0,0,0);
	trans[3][49]	= settr(0,0,0,0,0,"printf('the lease of token %d lapses: its worker is paused\\n',rtok[1])",0,0,0);
	trans[3][53]	= settr(367,0,65,26,26,".(goto)", 1, 2, 0); /* m: 54 -> 0,65 */
	reached3[54] = 1;
	trans[3][50]	= settr(364,2,51,2,0,"else", 1, 2, 0);
	trans[3][51]	= settr(365,0,65,27,27,"printf('the lease of token %d lapses: no live worker holds it\\n',rtok[1])", 1, 2, 0); /* m: 53 -> 0,65 */
	reached3[53] = 1;
	trans[3][54]	= settr(0,0,0,0,0,"rlap[1] = 1",0,0,0);
	T = trans[ 3][60] = settr(374,2,0,0,0,"ATOMIC", 1, 2, 0);
	T->nxt	= settr(374,2,57,0,0,"ATOMIC", 1, 2, 0);
	trans[3][57]	= settr(371,0,65,28,28,"(((1&&(phase==0))&&sent))", 1, 2, 0); /* m: 58 -> 65,0 */
	reached3[58] = 1;
	trans[3][58]	= settr(0,0,0,0,0,"phase = 1",0,0,0);
	trans[3][59]	= settr(0,0,0,0,0,"printf('time: the key is near the end of its retention\\n')",0,0,0);
	T = trans[ 3][64] = settr(378,2,0,0,0,"ATOMIC", 1, 2, 0);
	T->nxt	= settr(378,2,61,0,0,"ATOMIC", 1, 2, 0);
	trans[3][61]	= settr(375,0,65,29,29,"(((1&&(phase==1))&&((((cs!=1)&&!(toSrv??[_,0,_]))&&!(((wsrc[0]!=0)&&(wkey[0]==0))))&&!(((wsrc[1]!=0)&&(wkey[1]==0))))))", 1, 2, 0); /* m: 62 -> 65,0 */
	reached3[62] = 1;
	trans[3][62]	= settr(0,0,0,0,0,"phase = 2",0,0,0);
	trans[3][63]	= settr(0,0,0,0,0,"printf('time: the key's retention is over: the server may forget it\\n')",0,0,0);
	trans[3][67]	= settr(381,0,68,1,0,"break", 0, 2, 0);
	trans[3][68]	= settr(382,0,0,30,30,"-end-", 0, 3500, 0);

	/* proctype 2: Worker */

	trans[2] = (Trans **) emalloc(181*sizeof(Trans *));

	trans[2][178]	= settr(312,0,177,1,0,".(goto)", 0, 2, 0);
	T = trans[2][177] = settr(311,0,0,0,0,"DO", 0, 2, 0);
	    T->nxt	= settr(311,0,6,0,0,"DO", 0, 2, 0);
	T = trans[ 2][6] = settr(140,2,0,0,0,"ATOMIC", 1, 2, 0);
	T->nxt	= settr(140,2,1,0,0,"ATOMIC", 1, 503, 0);
	trans[2][1]	= settr(135,4,43,31,31,"toSrv??src,s,fp", 1, 503, 0); /* m: 2 -> 43,0 */
	reached2[2] = 1;
	trans[2][2]	= settr(0,0,0,0,0,"wsrc[w] = (src+1)",0,0,0);
	trans[2][3]	= settr(0,0,0,0,0,"k = s",0,0,0);
	trans[2][4]	= settr(0,0,0,0,0,"wkey[w] = k",0,0,0);
	trans[2][5]	= settr(0,0,0,0,0,"printf('worker %d: receives a request for scope %d, fingerprint %d\\n',w,s,fp)",0,0,0);
	trans[2][44]	= settr(178,0,43,1,0,".(goto)", 0, 2, 0);
	T = trans[2][43] = settr(177,0,0,0,0,"DO", 0, 2, 0);
	    T->nxt	= settr(177,0,32,0,0,"DO", 0, 2, 0);
	T = trans[ 2][32] = settr(166,2,0,0,0,"ATOMIC", 1, 2, 0);
	T->nxt	= settr(166,2,30,0,0,"ATOMIC", 1, 2, 0);
	T = trans[2][30] = settr(164,2,0,0,0,"IF", 1, 2, 0);
	T = T->nxt	= settr(164,2,7,0,0,"IF", 1, 2, 0);
	    T->nxt	= settr(164,2,24,0,0,"IF", 1, 2, 0);
	trans[2][7]	= settr(141,2,23,32,0,"((((rst[k]==0)||(((rst[k]==2)&&(rsc[k]==0))&&(phase==2)))||(((rst[k]==1)&&rlap[k])&&(rfp[k]==fp))))", 1, 2, 0);
	trans[2][7]->escp[0] = 156;
	reached2[156] = 1;
	/* escape #0: 156 */
	trans[2][156]	= settr(290,0,174,33,0,"(kill[w])", 1, 2, 0);
	T = trans[ 2][174] = settr(308,2,0,0,0,"ATOMIC", 1, 2, 0);
	T->nxt	= settr(308,2,157,0,0,"ATOMIC", 1, 2, 0);
	trans[2][157]	= settr(291,0,177,34,34,"printf('worker %d: crashes\\n',w)", 1, 2, 0); /* m: 158 -> 0,177 */
	reached2[158] = 1;
	trans[2][158]	= settr(0,0,0,0,0,"kill[w] = 0",0,0,0);
	trans[2][159]	= settr(0,0,0,0,0,"wsrc[w] = 0",0,0,0);
	trans[2][160]	= settr(0,0,0,0,0,"wkey[w] = 0",0,0,0);
	trans[2][161]	= settr(0,0,0,0,0,"wtok[w] = 0",0,0,0);
	trans[2][162]	= settr(0,0,0,0,0,"txa[w] = 0",0,0,0);
	trans[2][163]	= settr(0,0,0,0,0,"src = 0",0,0,0);
	trans[2][164]	= settr(0,0,0,0,0,"s = 0",0,0,0);
	trans[2][165]	= settr(0,0,0,0,0,"k = 0",0,0,0);
	trans[2][166]	= settr(0,0,0,0,0,"t = 0",0,0,0);
	trans[2][167]	= settr(0,0,0,0,0,"c = 0",0,0,0);
	trans[2][168]	= settr(0,0,0,0,0,"sc = 0",0,0,0);
	trans[2][169]	= settr(0,0,0,0,0,"e = 0",0,0,0);
	trans[2][170]	= settr(0,0,0,0,0,"fp = 0",0,0,0);
	trans[2][171]	= settr(0,0,0,0,0,"rf = 0",0,0,0);
	trans[2][172]	= settr(0,0,0,0,0,"lost = 0",0,0,0);
	trans[2][173]	= settr(0,0,0,0,0,"acq = 0",0,0,0);
	trans[2][176]	= settr(310,0,177,1,0,".(goto)", 0, 2, 0);
	/* end-escapes */
	T = trans[ 2][23] = settr(157,0,0,0,0,"sub-sequence", 1, 2, 0);
	T->nxt	= settr(157,0,8,0,0,"sub-sequence", 1, 2, 0);
	trans[2][8]	= settr(142,2,9,35,0,"assert(!((((((wtok[(1-w)]!=0)&&(wkey[(1-w)]==k))&&(rst[k]==1))&&(rtok[k]==wtok[(1-w)]))&&!(rlap[k]))))", 1, 2, 0);
	trans[2][8]->escp[0] = 156;
	reached2[156] = 1;
	/* escape #0: 156 */
	/* end-escapes */
	trans[2][9]	= settr(143,2,10,36,36,"ntok = (ntok+1)", 1, 2, 0);
	trans[2][9]->escp[0] = 156;
	reached2[156] = 1;
	/* escape #0: 156 */
	/* end-escapes */
	trans[2][10]	= settr(144,2,11,37,37,"t = ntok", 1, 2, 0);
	trans[2][10]->escp[0] = 156;
	reached2[156] = 1;
	/* escape #0: 156 */
	/* end-escapes */
	trans[2][11]	= settr(145,2,16,38,38,"wtok[w] = t", 1, 2, 0);
	trans[2][11]->escp[0] = 156;
	reached2[156] = 1;
	/* escape #0: 156 */
	/* end-escapes */
	T = trans[2][16] = settr(150,2,0,0,0,"IF", 1, 2, 0);
	T = T->nxt	= settr(150,2,12,0,0,"IF", 1, 2, 0);
	    T->nxt	= settr(150,2,14,0,0,"IF", 1, 2, 0);
	trans[2][12]	= settr(146,2,13,39,0,"((rst[k]==1))", 1, 2, 0);
	trans[2][12]->escp[0] = 156;
	reached2[156] = 1;
	/* escape #0: 156 */
	/* end-escapes */
	trans[2][13]	= settr(147,2,18,40,0,"printf('worker %d: takes the key over from token %d (its lease lapsed): token %d\\n',w,rtok[k],t)", 1, 2, 0);
	trans[2][13]->escp[0] = 156;
	reached2[156] = 1;
	/* escape #0: 156 */
	/* end-escapes */
	trans[2][17]	= settr(151,2,18,1,0,".(goto)", 1, 2, 0);
	trans[2][14]	= settr(148,2,15,2,0,"else", 1, 2, 0);
	trans[2][14]->escp[0] = 156;
	reached2[156] = 1;
	/* escape #0: 156 */
	/* end-escapes */
	trans[2][15]	= settr(149,2,18,41,0,"printf('worker %d: claims the key: token %d\\n',w,t)", 1, 2, 0);
	trans[2][15]->escp[0] = 156;
	reached2[156] = 1;
	/* escape #0: 156 */
	/* end-escapes */
	trans[2][18]	= settr(152,2,19,42,42,"rst[k] = 1", 1, 2, 0);
	trans[2][18]->escp[0] = 156;
	reached2[156] = 1;
	/* escape #0: 156 */
	/* end-escapes */
	trans[2][19]	= settr(153,2,20,43,43,"rtok[k] = t", 1, 2, 0);
	trans[2][19]->escp[0] = 156;
	reached2[156] = 1;
	/* escape #0: 156 */
	/* end-escapes */
	trans[2][20]	= settr(154,2,21,44,44,"rsc[k] = s", 1, 2, 0);
	trans[2][20]->escp[0] = 156;
	reached2[156] = 1;
	/* escape #0: 156 */
	/* end-escapes */
	trans[2][21]	= settr(155,2,22,45,45,"rfp[k] = fp", 1, 2, 0);
	trans[2][21]->escp[0] = 156;
	reached2[156] = 1;
	/* escape #0: 156 */
	/* end-escapes */
	trans[2][22]	= settr(156,2,31,46,46,"rlap[k] = 0", 1, 2, 0);
	trans[2][22]->escp[0] = 156;
	reached2[156] = 1;
	/* escape #0: 156 */
	/* end-escapes */
	trans[2][31]	= settr(165,0,41,1,0,".(goto)", 1, 2, 0);
	trans[2][24]	= settr(158,2,29,2,0,"else", 1, 2, 0);
	trans[2][24]->escp[0] = 156;
	reached2[156] = 1;
	/* escape #0: 156 */
	/* end-escapes */
	T = trans[ 2][29] = settr(163,0,0,0,0,"sub-sequence", 1, 2, 0);
	T->nxt	= settr(163,0,25,0,0,"sub-sequence", 1, 2, 0);
	trans[2][25]	= settr(159,2,26,47,47,"c = ( ((rfp[k]!=fp)) -> (4) : (( ((rst[k]==2)) -> (2) : (3) )) )", 1, 2, 0);
	trans[2][25]->escp[0] = 156;
	reached2[156] = 1;
	/* escape #0: 156 */
	/* end-escapes */
	trans[2][26]	= settr(160,2,27,48,48,"sc = rsc[k]", 1, 2, 0);
	trans[2][26]->escp[0] = 156;
	reached2[156] = 1;
	/* escape #0: 156 */
	/* end-escapes */
	trans[2][27]	= settr(161,2,28,49,49,"rf = rfp[k]", 1, 2, 0);
	trans[2][27]->escp[0] = 156;
	reached2[156] = 1;
	/* escape #0: 156 */
	/* end-escapes */
	trans[2][28]	= settr(162,2,31,50,50,"e = rtok[k]", 1, 2, 0);
	trans[2][28]->escp[0] = 156;
	reached2[156] = 1;
	/* escape #0: 156 */
	/* end-escapes */
	T = trans[2][41] = settr(175,0,0,0,0,"IF", 0, 2, 0);
	T = T->nxt	= settr(175,0,33,0,0,"IF", 0, 2, 0);
	    T->nxt	= settr(175,0,39,0,0,"IF", 0, 2, 0);
	trans[2][33]	= settr(167,0,37,51,0,"(((t==0)&&(c==3)))", 0, 2, 0);
	trans[2][33]->escp[0] = 156;
	reached2[156] = 1;
	/* escape #0: 156 */
	/* end-escapes */
	T = trans[2][37] = settr(171,0,0,0,0,"IF", 0, 2, 0);
	T = T->nxt	= settr(171,0,34,0,0,"IF", 0, 2, 0);
	    T->nxt	= settr(171,0,35,0,0,"IF", 0, 2, 0);
	trans[2][34]	= settr(168,0,114,1,0,"goto :b2", 0, 2, 0);
	trans[2][34]->escp[0] = 156;
	reached2[156] = 1;
	/* escape #0: 156 */
	/* end-escapes */
	trans[2][38]	= settr(172,0,43,1,0,".(goto)", 0, 2, 0);
	trans[2][35]	= settr(169,0,36,52,0,"(((rst[k]!=1)||(rtok[k]!=e)))", 1, 2, 0);
	trans[2][35]->escp[0] = 156;
	reached2[156] = 1;
	/* escape #0: 156 */
	/* end-escapes */
	trans[2][36]	= settr(170,0,43,53,53,"c = 0", 0, 2, 0);
	trans[2][36]->escp[0] = 156;
	reached2[156] = 1;
	/* escape #0: 156 */
	/* end-escapes */
	trans[2][42]	= settr(176,0,43,1,0,".(goto)", 0, 2, 0);
	trans[2][39]	= settr(173,0,114,2,0,"else", 0, 2, 0);
	trans[2][39]->escp[0] = 156;
	reached2[156] = 1;
	/* escape #0: 156 */
	/* end-escapes */
	trans[2][40]	= settr(174,0,114,1,0,"goto :b2", 0, 2, 0);
	trans[2][40]->escp[0] = 156;
	reached2[156] = 1;
	/* escape #0: 156 */
	/* end-escapes */
	trans[2][45]	= settr(179,0,114,1,0,"break", 0, 2, 0);
	trans[2][45]->escp[0] = 156;
	reached2[156] = 1;
	/* escape #0: 156 */
	/* end-escapes */
	T = trans[2][114] = settr(248,0,0,0,0,"IF", 0, 2, 0);
	T = T->nxt	= settr(248,0,46,0,0,"IF", 0, 2, 0);
	    T->nxt	= settr(248,0,113,0,0,"IF", 0, 2, 0);
	trans[2][46]	= settr(180,0,47,54,0,"((t!=0))", 0, 2, 0);
	trans[2][46]->escp[0] = 156;
	reached2[156] = 1;
	/* escape #0: 156 */
	/* end-escapes */
	trans[2][47]	= settr(181,0,58,55,55,"txa[w] = 1", 1, 2, 0);
	trans[2][47]->escp[0] = 156;
	reached2[156] = 1;
	/* escape #0: 156 */
	/* end-escapes */
	T = trans[2][58] = settr(192,0,0,0,0,"IF", 0, 2, 0);
	T = T->nxt	= settr(192,0,48,0,0,"IF", 0, 2, 0);
	    T->nxt	= settr(192,0,57,0,0,"IF", 0, 2, 0);
	trans[2][48]	= settr(182,0,98,1,0,"(1)", 0, 2, 0);
	trans[2][48]->escp[0] = 156;
	reached2[156] = 1;
	/* escape #0: 156 */
	/* end-escapes */
	trans[2][59]	= settr(193,0,98,1,0,".(goto)", 0, 2, 0);
	T = trans[ 2][57] = settr(191,2,0,0,0,"ATOMIC", 1, 2, 0);
	T->nxt	= settr(191,2,55,0,0,"ATOMIC", 1, 2, 0);
	T = trans[2][55] = settr(189,2,0,0,0,"IF", 1, 2, 0);
	T = T->nxt	= settr(189,2,49,0,0,"IF", 1, 2, 0);
	    T->nxt	= settr(189,2,52,0,0,"IF", 1, 2, 0);
	trans[2][49]	= settr(183,2,50,56,0,"(((rst[k]==1)&&(rtok[k]==t)))", 1, 2, 0);
	trans[2][49]->escp[0] = 156;
	reached2[156] = 1;
	/* escape #0: 156 */
	/* end-escapes */
	trans[2][50]	= settr(184,2,51,57,57,"rlap[k] = 0", 1, 2, 0);
	trans[2][50]->escp[0] = 156;
	reached2[156] = 1;
	/* escape #0: 156 */
	/* end-escapes */
	trans[2][51]	= settr(185,2,56,58,0,"printf('worker %d: renews its lease\\n',w)", 1, 2, 0);
	trans[2][51]->escp[0] = 156;
	reached2[156] = 1;
	/* escape #0: 156 */
	/* end-escapes */
	trans[2][56]	= settr(190,0,98,1,0,".(goto)", 1, 2, 0);
	trans[2][52]	= settr(186,2,53,2,0,"else", 1, 2, 0);
	trans[2][52]->escp[0] = 156;
	reached2[156] = 1;
	/* escape #0: 156 */
	/* end-escapes */
	trans[2][53]	= settr(187,2,54,59,59,"lost = 1", 1, 2, 0);
	trans[2][53]->escp[0] = 156;
	reached2[156] = 1;
	/* escape #0: 156 */
	/* end-escapes */
	trans[2][54]	= settr(188,2,56,60,0,"printf('worker %d: renewal finds the key taken: the work is cancelled\\n',w)", 1, 2, 0);
	trans[2][54]->escp[0] = 156;
	reached2[156] = 1;
	/* escape #0: 156 */
	/* end-escapes */
	T = trans[ 2][98] = settr(232,2,0,0,0,"ATOMIC", 1, 2, 0);
	T->nxt	= settr(232,2,88,0,0,"ATOMIC", 1, 2, 0);
	T = trans[2][88] = settr(222,2,0,0,0,"IF", 1, 2, 0);
	T = T->nxt	= settr(222,2,60,0,0,"IF", 1, 2, 0);
	T = T->nxt	= settr(222,2,62,0,0,"IF", 1, 2, 0);
	T = T->nxt	= settr(222,2,64,0,0,"IF", 1, 2, 0);
	    T->nxt	= settr(222,2,86,0,0,"IF", 1, 2, 0);
	trans[2][60]	= settr(194,2,61,61,61,"(lost)", 1, 2, 0);
	trans[2][60]->escp[0] = 156;
	reached2[156] = 1;
	/* escape #0: 156 */
	/* end-escapes */
	trans[2][61]	= settr(195,2,95,62,62,"c = 3", 1, 2, 0);
	trans[2][61]->escp[0] = 156;
	reached2[156] = 1;
	/* escape #0: 156 */
	/* end-escapes */
	trans[2][89]	= settr(223,2,95,1,0,".(goto)", 1, 2, 0);
	trans[2][62]	= settr(196,2,63,63,63,"((!(lost)&&!(txa[w])))", 1, 2, 0);
	trans[2][62]->escp[0] = 156;
	reached2[156] = 1;
	/* escape #0: 156 */
	/* end-escapes */
	trans[2][63]	= settr(197,2,95,64,64,"c = 5", 1, 2, 0);
	trans[2][63]->escp[0] = 156;
	reached2[156] = 1;
	/* escape #0: 156 */
	/* end-escapes */
	trans[2][64]	= settr(198,2,65,65,65,"(((!(lost)&&txa[w])&&((rst[k]==1)&&(rtok[k]==t))))", 1, 2, 0);
	trans[2][64]->escp[0] = 156;
	reached2[156] = 1;
	/* escape #0: 156 */
	/* end-escapes */
	trans[2][65]	= settr(199,2,66,66,66,"rst[k] = 2", 1, 2, 0);
	trans[2][65]->escp[0] = 156;
	reached2[156] = 1;
	/* escape #0: 156 */
	/* end-escapes */
	trans[2][66]	= settr(200,2,67,67,67,"rtok[k] = t", 1, 2, 0);
	trans[2][66]->escp[0] = 156;
	reached2[156] = 1;
	/* escape #0: 156 */
	/* end-escapes */
	trans[2][67]	= settr(201,2,68,68,68,"rlap[k] = 0", 1, 2, 0);
	trans[2][67]->escp[0] = 156;
	reached2[156] = 1;
	/* escape #0: 156 */
	/* end-escapes */
	trans[2][68]	= settr(202,2,69,69,0,"assert((commits[k]==0))", 1, 2, 0);
	trans[2][68]->escp[0] = 156;
	reached2[156] = 1;
	/* escape #0: 156 */
	/* end-escapes */
	trans[2][69]	= settr(203,2,70,70,70,"commits[k] = (commits[k]+1)", 1, 2, 0);
	trans[2][69]->escp[0] = 156;
	reached2[156] = 1;
	/* escape #0: 156 */
	/* end-escapes */
	trans[2][70]	= settr(204,2,71,71,71,"committed[k] = t", 1, 2, 0);
	trans[2][70]->escp[0] = 156;
	reached2[156] = 1;
	/* escape #0: 156 */
	/* end-escapes */
	trans[2][71]	= settr(205,2,72,72,72,"dst[0] = rst[0]", 1, 2, 0);
	trans[2][71]->escp[0] = 156;
	reached2[156] = 1;
	/* escape #0: 156 */
	/* end-escapes */
	trans[2][72]	= settr(206,2,73,73,73,"dtok[0] = rtok[0]", 1, 2, 0);
	trans[2][72]->escp[0] = 156;
	reached2[156] = 1;
	/* escape #0: 156 */
	/* end-escapes */
	trans[2][73]	= settr(207,2,74,74,74,"dsc[0] = rsc[0]", 1, 2, 0);
	trans[2][73]->escp[0] = 156;
	reached2[156] = 1;
	/* escape #0: 156 */
	/* end-escapes */
	trans[2][74]	= settr(208,2,75,75,75,"dfp[0] = rfp[0]", 1, 2, 0);
	trans[2][74]->escp[0] = 156;
	reached2[156] = 1;
	/* escape #0: 156 */
	/* end-escapes */
	trans[2][75]	= settr(209,2,76,76,76,"dlap[0] = rlap[0]", 1, 2, 0);
	trans[2][75]->escp[0] = 156;
	reached2[156] = 1;
	/* escape #0: 156 */
	/* end-escapes */
	trans[2][76]	= settr(210,2,77,77,77,"dst[1] = rst[1]", 1, 2, 0);
	trans[2][76]->escp[0] = 156;
	reached2[156] = 1;
	/* escape #0: 156 */
	/* end-escapes */
	trans[2][77]	= settr(211,2,78,78,78,"dtok[1] = rtok[1]", 1, 2, 0);
	trans[2][77]->escp[0] = 156;
	reached2[156] = 1;
	/* escape #0: 156 */
	/* end-escapes */
	trans[2][78]	= settr(212,2,79,79,79,"dsc[1] = rsc[1]", 1, 2, 0);
	trans[2][78]->escp[0] = 156;
	reached2[156] = 1;
	/* escape #0: 156 */
	/* end-escapes */
	trans[2][79]	= settr(213,2,80,80,80,"dfp[1] = rfp[1]", 1, 2, 0);
	trans[2][79]->escp[0] = 156;
	reached2[156] = 1;
	/* escape #0: 156 */
	/* end-escapes */
	trans[2][80]	= settr(214,2,81,81,81,"dlap[1] = rlap[1]", 1, 2, 0);
	trans[2][80]->escp[0] = 156;
	reached2[156] = 1;
	/* escape #0: 156 */
	/* end-escapes */
	trans[2][81]	= settr(215,2,82,82,82,"c = 1", 1, 2, 0);
	trans[2][81]->escp[0] = 156;
	reached2[156] = 1;
	/* escape #0: 156 */
	/* end-escapes */
	trans[2][82]	= settr(216,2,83,83,83,"sc = s", 1, 2, 0);
	trans[2][82]->escp[0] = 156;
	reached2[156] = 1;
	/* escape #0: 156 */
	/* end-escapes */
	trans[2][83]	= settr(217,2,84,84,84,"rf = fp", 1, 2, 0);
	trans[2][83]->escp[0] = 156;
	reached2[156] = 1;
	/* escape #0: 156 */
	/* end-escapes */
	trans[2][84]	= settr(218,2,85,85,85,"e = t", 1, 2, 0);
	trans[2][84]->escp[0] = 156;
	reached2[156] = 1;
	/* escape #0: 156 */
	/* end-escapes */
	trans[2][85]	= settr(219,2,95,86,0,"printf('worker %d: commits the outcome of token %d\\n',w,t)", 1, 2, 0);
	trans[2][85]->escp[0] = 156;
	reached2[156] = 1;
	/* escape #0: 156 */
	/* end-escapes */
	trans[2][86]	= settr(220,2,87,87,87,"(((!(lost)&&txa[w])&&!(((rst[k]==1)&&(rtok[k]==t)))))", 1, 2, 0);
	trans[2][86]->escp[0] = 156;
	reached2[156] = 1;
	/* escape #0: 156 */
	/* end-escapes */
	trans[2][87]	= settr(221,2,95,88,88,"c = 3", 1, 2, 0);
	trans[2][87]->escp[0] = 156;
	reached2[156] = 1;
	/* escape #0: 156 */
	/* end-escapes */
	T = trans[2][95] = settr(229,2,0,0,0,"IF", 1, 2, 0);
	T = T->nxt	= settr(229,2,90,0,0,"IF", 1, 2, 0);
	T = T->nxt	= settr(229,2,92,0,0,"IF", 1, 2, 0);
	    T->nxt	= settr(229,2,94,0,0,"IF", 1, 2, 0);
	trans[2][90]	= settr(224,2,91,89,0,"((c==3))", 1, 2, 0);
	trans[2][90]->escp[0] = 156;
	reached2[156] = 1;
	/* escape #0: 156 */
	/* end-escapes */
	trans[2][91]	= settr(225,2,96,90,0,"printf('worker %d: the fence refuses token %d's outcome: not recorded\\n',w,t)", 1, 2, 0);
	trans[2][91]->escp[0] = 156;
	reached2[156] = 1;
	/* escape #0: 156 */
	/* end-escapes */
	trans[2][96]	= settr(230,2,97,1,0,".(goto)", 1, 2, 0);
	trans[2][92]	= settr(226,2,93,91,0,"((c==5))", 1, 2, 0);
	trans[2][92]->escp[0] = 156;
	reached2[156] = 1;
	/* escape #0: 156 */
	/* end-escapes */
	trans[2][93]	= settr(227,2,96,92,0,"printf('worker %d: its transaction is gone: the work is undone\\n',w)", 1, 2, 0);
	trans[2][93]->escp[0] = 156;
	reached2[156] = 1;
	/* escape #0: 156 */
	/* end-escapes */
	trans[2][94]	= settr(228,2,96,2,0,"else", 1, 2, 0);
	trans[2][94]->escp[0] = 156;
	reached2[156] = 1;
	/* escape #0: 156 */
	/* end-escapes */
	trans[2][97]	= settr(231,0,111,93,93,"txa[w] = 0", 1, 2, 0);
	trans[2][97]->escp[0] = 156;
	reached2[156] = 1;
	/* escape #0: 156 */
	/* end-escapes */
	T = trans[2][111] = settr(245,0,0,0,0,"IF", 0, 2, 0);
	T = T->nxt	= settr(245,0,99,0,0,"IF", 0, 2, 0);
	    T->nxt	= settr(245,0,110,0,0,"IF", 0, 2, 0);
	trans[2][99]	= settr(233,0,109,94,0,"((c==5))", 0, 2, 0);
	trans[2][99]->escp[0] = 156;
	reached2[156] = 1;
	/* escape #0: 156 */
	/* end-escapes */
	T = trans[ 2][109] = settr(243,2,0,0,0,"ATOMIC", 1, 2, 0);
	T->nxt	= settr(243,2,107,0,0,"ATOMIC", 1, 2, 0);
	T = trans[2][107] = settr(241,2,0,0,0,"IF", 1, 2, 0);
	T = T->nxt	= settr(241,2,100,0,0,"IF", 1, 2, 0);
	    T->nxt	= settr(241,2,106,0,0,"IF", 1, 2, 0);
	trans[2][100]	= settr(234,2,101,95,95,"(((rst[k]==1)&&(rtok[k]==t)))", 1, 2, 0);
	trans[2][100]->escp[0] = 156;
	reached2[156] = 1;
	/* escape #0: 156 */
	/* end-escapes */
	trans[2][101]	= settr(235,2,102,96,96,"rst[k] = 0", 1, 2, 0);
	trans[2][101]->escp[0] = 156;
	reached2[156] = 1;
	/* escape #0: 156 */
	/* end-escapes */
	trans[2][102]	= settr(236,2,103,97,97,"rtok[k] = 0", 1, 2, 0);
	trans[2][102]->escp[0] = 156;
	reached2[156] = 1;
	/* escape #0: 156 */
	/* end-escapes */
	trans[2][103]	= settr(237,2,104,98,98,"rsc[k] = 0", 1, 2, 0);
	trans[2][103]->escp[0] = 156;
	reached2[156] = 1;
	/* escape #0: 156 */
	/* end-escapes */
	trans[2][104]	= settr(238,2,105,99,99,"rfp[k] = 0", 1, 2, 0);
	trans[2][104]->escp[0] = 156;
	reached2[156] = 1;
	/* escape #0: 156 */
	/* end-escapes */
	trans[2][105]	= settr(239,2,108,100,100,"rlap[k] = 0", 1, 2, 0);
	trans[2][105]->escp[0] = 156;
	reached2[156] = 1;
	/* escape #0: 156 */
	/* end-escapes */
	trans[2][108]	= settr(242,0,155,1,0,".(goto)", 1, 2, 0);
	trans[2][106]	= settr(240,2,108,2,0,"else", 1, 2, 0);
	trans[2][106]->escp[0] = 156;
	reached2[156] = 1;
	/* escape #0: 156 */
	/* end-escapes */
	trans[2][112]	= settr(246,0,155,1,0,".(goto)", 0, 2, 0);
	trans[2][110]	= settr(244,0,155,2,0,"else", 0, 2, 0);
	trans[2][110]->escp[0] = 156;
	reached2[156] = 1;
	/* escape #0: 156 */
	/* end-escapes */
	trans[2][115]	= settr(249,0,155,1,0,".(goto)", 0, 2, 0);
	trans[2][113]	= settr(247,0,155,2,0,"else", 0, 2, 0);
	trans[2][113]->escp[0] = 156;
	reached2[156] = 1;
	/* escape #0: 156 */
	/* end-escapes */
	T = trans[ 2][155] = settr(289,2,0,0,0,"ATOMIC", 1, 2, 0);
	T->nxt	= settr(289,2,139,0,0,"ATOMIC", 1, 2, 0);
	T = trans[ 2][139] = settr(273,0,0,0,0,"sub-sequence", 1, 2, 0);
	T->nxt	= settr(273,0,122,0,0,"sub-sequence", 1, 2, 0);
	T = trans[2][122] = settr(256,2,0,0,0,"IF", 1, 2, 0);
	T = T->nxt	= settr(256,2,116,0,0,"IF", 1, 2, 0);
	T = T->nxt	= settr(256,2,118,0,0,"IF", 1, 2, 0);
	    T->nxt	= settr(256,2,120,0,0,"IF", 1, 2, 0);
	trans[2][116]	= settr(250,2,117,101,0,"((c==1))", 1, 2, 0);
	trans[2][116]->escp[0] = 156;
	reached2[156] = 1;
	/* escape #0: 156 */
	/* end-escapes */
	trans[2][117]	= settr(251,2,137,102,0,"printf('worker %d: answers 200 (execution %d)\\n',w,e)", 1, 2, 0);
	trans[2][117]->escp[0] = 156;
	reached2[156] = 1;
	/* escape #0: 156 */
	/* end-escapes */
	trans[2][123]	= settr(257,2,137,1,0,".(goto)", 1, 2, 0);
	trans[2][118]	= settr(252,2,119,103,0,"((c==2))", 1, 2, 0);
	trans[2][118]->escp[0] = 156;
	reached2[156] = 1;
	/* escape #0: 156 */
	/* end-escapes */
	trans[2][119]	= settr(253,2,137,104,0,"printf('worker %d: answers 200 from the record, replayed (execution %d)\\n',w,e)", 1, 2, 0);
	trans[2][119]->escp[0] = 156;
	reached2[156] = 1;
	/* escape #0: 156 */
	/* end-escapes */
	trans[2][120]	= settr(254,2,121,2,0,"else", 1, 2, 0);
	trans[2][120]->escp[0] = 156;
	reached2[156] = 1;
	/* escape #0: 156 */
	/* end-escapes */
	trans[2][121]	= settr(255,2,137,105,0,"printf('worker %d: answers %d\\n',w,( (((c==1)||(c==2))) -> (200) : (( ((c==3)) -> (409) : (( ((c==4)) -> (422) : (( ((c==5)) -> (500) : (401) )) )) )) ))", 1, 2, 0);
	trans[2][121]->escp[0] = 156;
	reached2[156] = 1;
	/* escape #0: 156 */
	/* end-escapes */
	T = trans[2][137] = settr(271,2,0,0,0,"IF", 1, 2, 0);
	T = T->nxt	= settr(271,2,124,0,0,"IF", 1, 2, 0);
	    T->nxt	= settr(271,2,130,0,0,"IF", 1, 2, 0);
	trans[2][124]	= settr(258,2,128,106,106,"((src==1))", 1, 2, 0);
	trans[2][124]->escp[0] = 156;
	reached2[156] = 1;
	/* escape #0: 156 */
	/* end-escapes */
	T = trans[2][128] = settr(262,2,0,0,0,"IF", 1, 2, 0);
	T = T->nxt	= settr(262,2,125,0,0,"IF", 1, 2, 0);
	    T->nxt	= settr(262,2,127,0,0,"IF", 1, 2, 0);
	trans[2][125]	= settr(259,2,126,107,0,"(nfull(toOther))", 1, 5, 0);
	trans[2][125]->escp[0] = 156;
	reached2[156] = 1;
	/* escape #0: 156 */
	/* end-escapes */
	trans[2][126]	= settr(260,2,140,108,108,"toOther!c,sc,rf,e", 1, 5, 0);
	trans[2][126]->escp[0] = 156;
	reached2[156] = 1;
	/* escape #0: 156 */
	/* end-escapes */
	trans[2][129]	= settr(263,2,140,1,0,".(goto)", 1, 2, 0);
	trans[2][127]	= settr(261,2,140,109,0,"(full(toOther))", 1, 1505, 0);
	trans[2][127]->escp[0] = 156;
	reached2[156] = 1;
	/* escape #0: 156 */
	/* end-escapes */
	trans[2][138]	= settr(272,2,140,1,0,".(goto)", 1, 2, 0);
	trans[2][130]	= settr(264,2,135,2,0,"else", 1, 2, 0);
	trans[2][130]->escp[0] = 156;
	reached2[156] = 1;
	/* escape #0: 156 */
	/* end-escapes */
	T = trans[2][135] = settr(269,2,0,0,0,"IF", 1, 2, 0);
	T = T->nxt	= settr(269,2,131,0,0,"IF", 1, 2, 0);
	    T->nxt	= settr(269,2,132,0,0,"IF", 1, 2, 0);
	trans[2][131]	= settr(265,2,140,110,110,"toCli!c,sc,rf,e", 1, 4, 0);
	trans[2][131]->escp[0] = 156;
	reached2[156] = 1;
	/* escape #0: 156 */
	/* end-escapes */
	trans[2][136]	= settr(270,2,140,1,0,".(goto)", 1, 2, 0);
	trans[2][132]	= settr(266,2,133,111,0,"((1&&((nf<3)&&!(calm))))", 1, 2, 0);
	trans[2][132]->escp[0] = 156;
	reached2[156] = 1;
	/* escape #0: 156 */
	/* end-escapes */
	trans[2][133]	= settr(267,2,134,112,112,"nf = (nf+1)", 1, 2, 0);
	trans[2][133]->escp[0] = 156;
	reached2[156] = 1;
	/* escape #0: 156 */
	/* end-escapes */
	trans[2][134]	= settr(268,2,140,113,0,"printf('network: loses the answer\\n')", 1, 2, 0);
	trans[2][134]->escp[0] = 156;
	reached2[156] = 1;
	/* escape #0: 156 */
	/* end-escapes */
	trans[2][140]	= settr(274,2,141,114,114,"wsrc[w] = 0", 1, 2, 0);
	trans[2][140]->escp[0] = 156;
	reached2[156] = 1;
	/* escape #0: 156 */
	/* end-escapes */
	trans[2][141]	= settr(275,2,142,115,115,"wkey[w] = 0", 1, 2, 0);
	trans[2][141]->escp[0] = 156;
	reached2[156] = 1;
	/* escape #0: 156 */
	/* end-escapes */
	trans[2][142]	= settr(276,2,143,116,116,"wtok[w] = 0", 1, 2, 0);
	trans[2][142]->escp[0] = 156;
	reached2[156] = 1;
	/* escape #0: 156 */
	/* end-escapes */
	trans[2][143]	= settr(277,2,144,117,117,"txa[w] = 0", 1, 2, 0);
	trans[2][143]->escp[0] = 156;
	reached2[156] = 1;
	/* escape #0: 156 */
	/* end-escapes */
	trans[2][144]	= settr(278,2,145,118,118,"src = 0", 1, 2, 0);
	trans[2][144]->escp[0] = 156;
	reached2[156] = 1;
	/* escape #0: 156 */
	/* end-escapes */
	trans[2][145]	= settr(279,2,146,119,119,"s = 0", 1, 2, 0);
	trans[2][145]->escp[0] = 156;
	reached2[156] = 1;
	/* escape #0: 156 */
	/* end-escapes */
	trans[2][146]	= settr(280,2,147,120,120,"k = 0", 1, 2, 0);
	trans[2][146]->escp[0] = 156;
	reached2[156] = 1;
	/* escape #0: 156 */
	/* end-escapes */
	trans[2][147]	= settr(281,2,148,121,121,"t = 0", 1, 2, 0);
	trans[2][147]->escp[0] = 156;
	reached2[156] = 1;
	/* escape #0: 156 */
	/* end-escapes */
	trans[2][148]	= settr(282,2,149,122,122,"c = 0", 1, 2, 0);
	trans[2][148]->escp[0] = 156;
	reached2[156] = 1;
	/* escape #0: 156 */
	/* end-escapes */
	trans[2][149]	= settr(283,2,150,123,123,"sc = 0", 1, 2, 0);
	trans[2][149]->escp[0] = 156;
	reached2[156] = 1;
	/* escape #0: 156 */
	/* end-escapes */
	trans[2][150]	= settr(284,2,151,124,124,"e = 0", 1, 2, 0);
	trans[2][150]->escp[0] = 156;
	reached2[156] = 1;
	/* escape #0: 156 */
	/* end-escapes */
	trans[2][151]	= settr(285,2,152,125,125,"fp = 0", 1, 2, 0);
	trans[2][151]->escp[0] = 156;
	reached2[156] = 1;
	/* escape #0: 156 */
	/* end-escapes */
	trans[2][152]	= settr(286,2,153,126,126,"rf = 0", 1, 2, 0);
	trans[2][152]->escp[0] = 156;
	reached2[156] = 1;
	/* escape #0: 156 */
	/* end-escapes */
	trans[2][153]	= settr(287,2,154,127,127,"lost = 0", 1, 2, 0);
	trans[2][153]->escp[0] = 156;
	reached2[156] = 1;
	/* escape #0: 156 */
	/* end-escapes */
	trans[2][154]	= settr(288,0,177,128,128,"acq = 0", 1, 2, 0);
	trans[2][154]->escp[0] = 156;
	reached2[156] = 1;
	/* escape #0: 156 */
	/* end-escapes */
	trans[2][179]	= settr(313,0,180,1,0,"break", 0, 2, 0);
	trans[2][180]	= settr(314,0,0,129,129,"-end-", 0, 3500, 0);

	/* proctype 1: Other */

	trans[1] = (Trans **) emalloc(19*sizeof(Trans *));

	T = trans[1][9] = settr(125,0,0,0,0,"IF", 0, 2, 0);
	T = T->nxt	= settr(125,0,4,0,0,"IF", 0, 2, 0);
	    T->nxt	= settr(125,0,8,0,0,"IF", 0, 2, 0);
	T = trans[ 1][4] = settr(120,2,0,0,0,"ATOMIC", 1, 2, 0);
	T->nxt	= settr(120,2,1,0,0,"ATOMIC", 1, 3, 0);
	trans[1][1]	= settr(117,2,3,130,130,"(nfull(toSrv))", 1, 3, 0); /* m: 2 -> 3,0 */
	reached1[2] = 1;
	trans[1][2]	= settr(0,0,0,0,0,"s = 1",0,0,0);
	trans[1][3]	= settr(119,0,11,131,131,"toSrv!1,1,0", 1, 3, 0);
	trans[1][10]	= settr(126,0,11,1,0,".(goto)", 0, 2, 0);
	T = trans[ 1][8] = settr(124,2,0,0,0,"ATOMIC", 1, 2, 0);
	T->nxt	= settr(124,2,5,0,0,"ATOMIC", 1, 3, 0);
	trans[1][5]	= settr(121,2,7,132,132,"(((phase==0)&&nfull(toSrv)))", 1, 3, 0); /* m: 6 -> 7,0 */
	reached1[6] = 1;
	trans[1][6]	= settr(0,0,0,0,0,"fp = 1",0,0,0);
	trans[1][7]	= settr(123,0,11,133,133,"toSrv!1,0,1", 1, 3, 0);
	trans[1][11]	= settr(127,0,16,134,134,"toOther?c,sc,afp,e", 1, 505, 0);
	T = trans[1][16] = settr(132,0,0,0,0,"IF", 0, 2, 0);
	T = T->nxt	= settr(132,0,12,0,0,"IF", 0, 2, 0);
	    T->nxt	= settr(132,0,15,0,0,"IF", 0, 2, 0);
	trans[1][12]	= settr(128,0,14,135,135,"(((c==1)||(c==2)))", 0, 2, 0); /* m: 13 -> 14,0 */
	reached1[13] = 1;
	trans[1][13]	= settr(0,0,0,0,0,"assert((sc==s))",0,0,0);
	trans[1][14]	= settr(130,0,18,136,0,"assert(((afp==fp)&&(e==committed[s])))", 1, 2, 0);
	trans[1][17]	= settr(133,0,18,1,0,".(goto)", 0, 2, 0);
	trans[1][15]	= settr(131,0,18,2,0,"else", 0, 2, 0);
	trans[1][18]	= settr(134,0,0,137,137,"-end-", 0, 3500, 0);

	/* proctype 0: Client */

	trans[0] = (Trans **) emalloc(118*sizeof(Trans *));

	trans[0][115]	= settr(114,0,114,1,0,".(goto)", 0, 2, 0);
	T = trans[0][114] = settr(113,0,0,0,0,"DO", 0, 2, 0);
	T = T->nxt	= settr(113,0,7,0,0,"DO", 0, 2, 0);
	T = T->nxt	= settr(113,0,37,0,0,"DO", 0, 2, 0);
	T = T->nxt	= settr(113,0,68,0,0,"DO", 0, 2, 0);
	T = T->nxt	= settr(113,0,71,0,0,"DO", 0, 2, 0);
	T = T->nxt	= settr(113,0,75,0,0,"DO", 0, 2, 0);
	T = T->nxt	= settr(113,0,90,0,0,"DO", 0, 2, 0);
	T = T->nxt	= settr(113,0,93,0,0,"DO", 0, 2, 0);
	    T->nxt	= settr(113,0,113,0,0,"DO", 0, 2, 0);
	T = trans[ 0][7] = settr(6,2,0,0,0,"ATOMIC", 1, 2, 0);
	T->nxt	= settr(6,2,1,0,0,"ATOMIC", 1, 2, 0);
	trans[0][1]	= settr(0,2,5,138,138,"(!(started))", 1, 2, 0); /* m: 2 -> 5,0 */
	reached0[2] = 1;
	trans[0][2]	= settr(0,0,0,0,0,"started = 1",0,0,0);
	T = trans[ 0][5] = settr(4,0,0,0,0,"sub-sequence", 1, 2, 0);
	T->nxt	= settr(4,0,3,0,0,"sub-sequence", 1, 2, 0);
	trans[0][3]	= settr(2,0,114,139,139,"js = 1", 1, 2, 0); /* m: 4 -> 0,114 */
	reached0[4] = 1;
	trans[0][4]	= settr(0,0,0,0,0,"jd = 1",0,0,0);
	trans[0][6]	= settr(0,0,0,0,0,"cs = 1",0,0,0);
	T = trans[ 0][37] = settr(36,2,0,0,0,"ATOMIC", 1, 2, 0);
	T->nxt	= settr(36,2,8,0,0,"ATOMIC", 1, 3, 4);
	trans[0][8]	= settr(7,2,35,140,0,"(((((cs==1)||(cs==2))&&nfull(toSrv))&&nfull(toCli)))", 1, 3, 4);
	T = trans[0][35] = settr(34,2,0,0,0,"IF", 1, 3, 4);
	T = T->nxt	= settr(34,2,9,0,0,"IF", 1, 3, 4);
	    T->nxt	= settr(34,2,15,0,0,"IF", 1, 3, 4);
	trans[0][9]	= settr(8,2,14,141,0,"(((cs==2)&&(phase>0)))", 1, 3, 4);
	T = trans[ 0][14] = settr(13,0,0,0,0,"sub-sequence", 1, 3, 4);
	T->nxt	= settr(13,0,12,0,0,"sub-sequence", 1, 3, 4);
	T = trans[ 0][12] = settr(11,0,0,0,0,"sub-sequence", 1, 3, 4);
	T->nxt	= settr(11,0,10,0,0,"sub-sequence", 1, 3, 4);
	trans[0][10]	= settr(9,0,114,142,142,"js = 5", 1, 3, 4); /* m: 11 -> 0,114 */
	reached0[11] = 1;
	trans[0][11]	= settr(0,0,0,0,0,"jd = 5",0,0,0);
	trans[0][13]	= settr(0,0,0,0,0,"cs = 0",0,0,0);
	trans[0][36]	= settr(35,0,114,143,143,".(goto)", 1, 3, 4);
	trans[0][15]	= settr(14,2,32,2,0,"else", 1, 3, 4);
	T = trans[ 0][32] = settr(31,0,0,0,0,"sub-sequence", 1, 3, 4);
	T->nxt	= settr(31,0,30,0,0,"sub-sequence", 1, 3, 4);
	T = trans[0][30] = settr(29,2,0,0,0,"IF", 1, 3, 4);
	T = T->nxt	= settr(29,2,16,0,0,"IF", 1, 3, 4);
	T = T->nxt	= settr(29,2,18,0,0,"IF", 1, 3, 4);
	T = T->nxt	= settr(29,2,21,0,0,"IF", 1, 3, 4);
	    T->nxt	= settr(29,2,26,0,0,"IF", 1, 3, 4);
	trans[0][16]	= settr(15,0,114,144,144,"toSrv!0,0,0", 1, 3, 4); /* m: 17 -> 114,0 */
	reached0[17] = 1;
	trans[0][17]	= settr(0,0,0,0,0,"printf('client: sends the request\\n')",0,0,0);
	trans[0][31]	= settr(30,2,33,1,0,".(goto)", 1, 3, 4); /* m: 33 -> 0,114 */
	reached0[33] = 1;
	trans[0][18]	= settr(17,0,114,145,145,"((1&&((nf<3)&&!(calm))))", 1, 3, 4); /* m: 19 -> 114,0 */
	reached0[19] = 1;
	trans[0][19]	= settr(0,0,0,0,0,"nf = (nf+1)",0,0,0);
	trans[0][20]	= settr(0,0,0,0,0,"printf('network: loses the request\\n')",0,0,0);
	trans[0][21]	= settr(20,2,23,146,146,"(((1&&((nf<3)&&!(calm)))&&(len(toSrv)<(3-1))))", 1, 3, 4); /* m: 22 -> 23,0 */
	reached0[22] = 1;
	trans[0][22]	= settr(0,0,0,0,0,"nf = (nf+1)",0,0,0);
	trans[0][23]	= settr(22,2,24,147,147,"toSrv!0,0,0", 1, 3, 4);
	trans[0][24]	= settr(23,0,114,148,148,"toSrv!0,0,0", 1, 3, 4); /* m: 25 -> 114,0 */
	reached0[25] = 1;
	trans[0][25]	= settr(0,0,0,0,0,"printf('client: sends the request; the network will deliver it twice\\n')",0,0,0);
	trans[0][26]	= settr(25,2,28,149,149,"((1&&((nf<3)&&!(calm))))", 1, 3, 4); /* m: 27 -> 28,0 */
	reached0[27] = 1;
	trans[0][27]	= settr(0,0,0,0,0,"nf = (nf+1)",0,0,0);
	trans[0][28]	= settr(27,0,114,150,150,"toCli!6,0,0,0", 1, 3, 4); /* m: 29 -> 114,0 */
	reached0[29] = 1;
	trans[0][29]	= settr(0,0,0,0,0,"printf('client: sends the request; it is refused for its credentials (401)\\n')",0,0,0);
	trans[0][33]	= settr(32,0,114,151,151,"sent = 1", 1, 3, 4); /* m: 34 -> 0,114 */
	reached0[34] = 1;
	trans[0][34]	= settr(0,0,0,0,0,"cs = ( ((js==0)) -> (4) : (3) )",0,0,0);
	T = trans[ 0][68] = settr(67,2,0,0,0,"ATOMIC", 1, 2, 0);
	T->nxt	= settr(67,2,38,0,0,"ATOMIC", 1, 504, 0);
	trans[0][38]	= settr(37,2,62,152,152,"toCli?c,sc,fp,e", 1, 504, 0);
	T = trans[0][62] = settr(61,2,0,0,0,"IF", 1, 504, 0);
	T = T->nxt	= settr(61,2,39,0,0,"IF", 1, 504, 0);
	    T->nxt	= settr(61,2,61,0,0,"IF", 1, 504, 0);
	trans[0][39]	= settr(38,2,59,153,0,"((cs==3))", 1, 504, 0);
	T = trans[0][59] = settr(58,2,0,0,0,"IF", 1, 504, 0);
	T = T->nxt	= settr(58,2,40,0,0,"IF", 1, 504, 0);
	T = T->nxt	= settr(58,2,46,0,0,"IF", 1, 504, 0);
	T = T->nxt	= settr(58,2,50,0,0,"IF", 1, 504, 0);
	    T->nxt	= settr(58,2,56,0,0,"IF", 1, 504, 0);
	trans[0][40]	= settr(39,0,114,154,154,"(((c==1)||(c==2)))", 1, 504, 0); /* m: 41 -> 114,0 */
	reached0[41] = 1;
	trans[0][41]	= settr(0,0,0,0,0,"assert((sc==0))",0,0,0);
	trans[0][42]	= settr(0,0,0,0,0,"assert(((fp==0)&&(e==committed[0])))",0,0,0);
	trans[0][43]	= settr(0,0,0,0,0,"js = 3",0,0,0);
	trans[0][44]	= settr(0,0,0,0,0,"cs = 0",0,0,0);
	trans[0][45]	= settr(0,0,0,0,0,"printf('client: gets 200 (execution %d): completed, written lazily\\n',e)",0,0,0);
	trans[0][60]	= settr(59,2,64,1,0,".(goto)", 1, 504, 0); /* m: 64 -> 0,114 */
	reached0[64] = 1;
	trans[0][46]	= settr(45,0,114,155,155,"((c==4))", 1, 504, 0); /* m: 47 -> 114,0 */
	reached0[47] = 1;
	trans[0][47]	= settr(0,0,0,0,0,"js = 4",0,0,0);
	trans[0][48]	= settr(0,0,0,0,0,"cs = 0",0,0,0);
	trans[0][49]	= settr(0,0,0,0,0,"printf('client: gets 422: failed, written lazily\\n')",0,0,0);
	trans[0][50]	= settr(49,2,53,156,156,"((c==6))", 1, 504, 0);
	T = trans[ 0][53] = settr(52,0,0,0,0,"sub-sequence", 1, 504, 0);
	T->nxt	= settr(52,0,51,0,0,"sub-sequence", 1, 504, 0);
	trans[0][51]	= settr(50,0,114,157,157,"js = 2", 1, 504, 0); /* m: 52 -> 0,114 */
	reached0[52] = 1;
	trans[0][52]	= settr(0,0,0,0,0,"jd = 2",0,0,0);
	trans[0][54]	= settr(0,0,0,0,0,"cs = 0",0,0,0);
	trans[0][55]	= settr(0,0,0,0,0,"printf('client: gets 401: refused, written durably\\n')",0,0,0);
	trans[0][56]	= settr(55,0,114,158,158,"(((c==3)||(c==5)))", 1, 504, 0); /* m: 57 -> 114,0 */
	reached0[57] = 1;
	trans[0][57]	= settr(0,0,0,0,0,"cs = 2",0,0,0);
	trans[0][58]	= settr(0,0,0,0,0,"printf('client: gets %d: will retry\\n',( (((c==1)||(c==2))) -> (200) : (( ((c==3)) -> (409) : (( ((c==4)) -> (422) : (( ((c==5)) -> (500) : (401) )) )) )) ))",0,0,0);
	trans[0][63]	= settr(62,2,64,1,0,".(goto)", 1, 504, 0); /* m: 64 -> 0,114 */
	reached0[64] = 1;
	trans[0][61]	= settr(60,2,64,2,0,"else", 1, 504, 0);
	trans[0][64]	= settr(63,0,114,159,159,"c = 0", 1, 504, 0); /* m: 65 -> 0,114 */
	reached0[65] = 1;
	trans[0][65]	= settr(0,0,0,0,0,"sc = 0",0,0,0);
	trans[0][66]	= settr(0,0,0,0,0,"fp = 0",0,0,0);
	trans[0][67]	= settr(0,0,0,0,0,"e = 0",0,0,0);
	T = trans[ 0][71] = settr(70,2,0,0,0,"ATOMIC", 1, 2, 0);
	T->nxt	= settr(70,2,69,0,0,"ATOMIC", 1, 2, 0);
	trans[0][69]	= settr(68,0,114,160,160,"(((cs==3)&&!((((toSrv??[0,_,_]||(len(toCli)>0))||(wsrc[0]==(0+1)))||(wsrc[1]==(0+1))))))", 1, 2, 0); /* m: 70 -> 114,0 */
	reached0[70] = 1;
	trans[0][70]	= settr(0,0,0,0,0,"cs = 2",0,0,0);
	T = trans[ 0][75] = settr(74,2,0,0,0,"ATOMIC", 1, 2, 0);
	T->nxt	= settr(74,2,72,0,0,"ATOMIC", 1, 2, 0);
	trans[0][72]	= settr(71,0,114,161,161,"(((1&&((nf<3)&&!(calm)))&&(cs==3)))", 1, 2, 0); /* m: 73 -> 114,0 */
	reached0[73] = 1;
	trans[0][73]	= settr(0,0,0,0,0,"nf = (nf+1)",0,0,0);
	trans[0][74]	= settr(0,0,0,0,0,"cs = 2",0,0,0);
	T = trans[ 0][90] = settr(89,2,0,0,0,"ATOMIC", 1, 2, 0);
	T->nxt	= settr(89,2,76,0,0,"ATOMIC", 1, 2, 0);
	trans[0][76]	= settr(75,2,88,162,0,"(((js==2)&&(cs==0)))", 1, 2, 0);
	T = trans[0][88] = settr(87,2,0,0,0,"IF", 1, 2, 0);
	T = T->nxt	= settr(87,2,77,0,0,"IF", 1, 2, 0);
	    T->nxt	= settr(87,2,83,0,0,"IF", 1, 2, 0);
	trans[0][77]	= settr(76,2,82,163,0,"((phase>0))", 1, 2, 0);
	T = trans[ 0][82] = settr(81,0,0,0,0,"sub-sequence", 1, 2, 0);
	T->nxt	= settr(81,0,80,0,0,"sub-sequence", 1, 2, 0);
	T = trans[ 0][80] = settr(79,0,0,0,0,"sub-sequence", 1, 2, 0);
	T->nxt	= settr(79,0,78,0,0,"sub-sequence", 1, 2, 0);
	trans[0][78]	= settr(77,0,114,164,164,"js = 5", 1, 2, 0); /* m: 79 -> 0,114 */
	reached0[79] = 1;
	trans[0][79]	= settr(0,0,0,0,0,"jd = 5",0,0,0);
	trans[0][81]	= settr(0,0,0,0,0,"cs = 0",0,0,0);
	trans[0][89]	= settr(88,0,114,165,165,".(goto)", 1, 2, 0);
	trans[0][83]	= settr(82,2,86,2,0,"else", 1, 2, 0);
	T = trans[ 0][86] = settr(85,0,0,0,0,"sub-sequence", 1, 2, 0);
	T->nxt	= settr(85,0,84,0,0,"sub-sequence", 1, 2, 0);
	trans[0][84]	= settr(83,0,114,166,166,"js = 1", 1, 2, 0); /* m: 85 -> 0,114 */
	reached0[85] = 1;
	trans[0][85]	= settr(0,0,0,0,0,"jd = 1",0,0,0);
	trans[0][87]	= settr(0,0,0,0,0,"cs = 1",0,0,0);
	T = trans[ 0][93] = settr(92,2,0,0,0,"ATOMIC", 1, 2, 0);
	T->nxt	= settr(92,2,91,0,0,"ATOMIC", 1, 2, 0);
	trans[0][91]	= settr(90,0,114,167,167,"((jd!=js))", 1, 2, 0); /* m: 92 -> 114,0 */
	reached0[92] = 1;
	trans[0][92]	= settr(0,0,0,0,0,"jd = js",0,0,0);
	T = trans[ 0][113] = settr(112,2,0,0,0,"ATOMIC", 1, 2, 0);
	T->nxt	= settr(112,2,94,0,0,"ATOMIC", 1, 2, 0);
	trans[0][94]	= settr(93,2,111,168,168,"(((1&&((nf<3)&&!(calm)))&&started))", 1, 2, 0); /* m: 95 -> 111,0 */
	reached0[95] = 1;
	trans[0][95]	= settr(0,0,0,0,0,"nf = (nf+1)",0,0,0);
	trans[0][96]	= settr(0,0,0,0,0,"printf('client: crashes (the journal on disk says %d) and calls Resume\\n',jd)",0,0,0);
	trans[0][97]	= settr(0,0,0,0,0,"js = jd",0,0,0);
	trans[0][98]	= settr(0,0,0,0,0,"cs = 0",0,0,0);
	T = trans[0][111] = settr(110,2,0,0,0,"IF", 1, 2, 0);
	T = T->nxt	= settr(110,2,99,0,0,"IF", 1, 2, 0);
	    T->nxt	= settr(110,2,110,0,0,"IF", 1, 2, 0);
	trans[0][99]	= settr(98,2,108,169,0,"((js==1))", 1, 2, 0);
	T = trans[0][108] = settr(107,2,0,0,0,"IF", 1, 2, 0);
	T = T->nxt	= settr(107,2,100,0,0,"IF", 1, 2, 0);
	    T->nxt	= settr(107,2,106,0,0,"IF", 1, 2, 0);
	trans[0][100]	= settr(99,2,105,170,0,"((phase>0))", 1, 2, 0);
	T = trans[ 0][105] = settr(104,0,0,0,0,"sub-sequence", 1, 2, 0);
	T->nxt	= settr(104,0,103,0,0,"sub-sequence", 1, 2, 0);
	T = trans[ 0][103] = settr(102,0,0,0,0,"sub-sequence", 1, 2, 0);
	T->nxt	= settr(102,0,101,0,0,"sub-sequence", 1, 2, 0);
	trans[0][101]	= settr(100,0,114,171,171,"js = 5", 1, 2, 0); /* m: 102 -> 0,114 */
	reached0[102] = 1;
	trans[0][102]	= settr(0,0,0,0,0,"jd = 5",0,0,0);
	trans[0][104]	= settr(0,0,0,0,0,"cs = 0",0,0,0);
	trans[0][109]	= settr(108,0,114,172,172,".(goto)", 1, 2, 0); /* m: 112 -> 0,114 */
	reached0[112] = 1;
	trans[0][106]	= settr(105,2,107,2,0,"else", 1, 2, 0);
	trans[0][107]	= settr(106,0,114,173,173,"cs = 1", 1, 2, 0); /* m: 109 -> 0,114 */
	reached0[109] = 1;
	trans[0][112]	= settr(111,0,114,174,174,".(goto)", 1, 2, 0);
	trans[0][110]	= settr(109,2,112,2,0,"else", 1, 2, 0);
	trans[0][116]	= settr(115,0,117,1,0,"break", 0, 2, 0);
	trans[0][117]	= settr(116,0,0,175,175,"-end-", 0, 3500, 0);
	/* np_ demon: */
	trans[_NP_] = (Trans **) emalloc(3*sizeof(Trans *));
	T = trans[_NP_][0] = settr(9997,0,1,_T5,0,"(np_)", 1,2,0);
	    T->nxt	  = settr(9998,0,0,_T2,0,"(1)",   0,2,0);
	T = trans[_NP_][1] = settr(9999,0,1,_T5,0,"(np_)", 1,2,0);
}

Trans *
settr(	int t_id, int a, int b, int c, int d,
	char *t, int g, int tpe0, int tpe1)
{	Trans *tmp = (Trans *) emalloc(sizeof(Trans));

	tmp->atom  = a&(6|32);	/* only (2|8|32) have meaning */
	if (!g) tmp->atom |= 8;	/* no global references */
	tmp->st    = b;
	tmp->tpe[0] = tpe0;
	tmp->tpe[1] = tpe1;
	tmp->tp    = t;
	tmp->t_id  = t_id;
	tmp->forw  = c;
	tmp->back  = d;
	return tmp;
}

Trans *
cpytr(Trans *a)
{	Trans *tmp = (Trans *) emalloc(sizeof(Trans));

	int i;
	tmp->atom  = a->atom;
	tmp->st    = a->st;
#ifdef HAS_UNLESS
	tmp->e_trans = a->e_trans;
	for (i = 0; i < HAS_UNLESS; i++)
		tmp->escp[i] = a->escp[i];
#endif
	tmp->tpe[0] = a->tpe[0];
	tmp->tpe[1] = a->tpe[1];
	for (i = 0; i < 6; i++)
	{	tmp->qu[i] = a->qu[i];
		tmp->ty[i] = a->ty[i];
	}
	tmp->tp    = (char *) emalloc(strlen(a->tp)+1);
	strcpy(tmp->tp, a->tp);
	tmp->t_id  = a->t_id;
	tmp->forw  = a->forw;
	tmp->back  = a->back;
	return tmp;
}

#ifndef NOREDUCE
int
srinc_set(int n)
{	if (n <= 2) return LOCAL;
	if (n <= 2+  DELTA) return Q_FULL_F; /* 's' or nfull  */
	if (n <= 2+2*DELTA) return Q_EMPT_F; /* 'r' or nempty */
	if (n <= 2+3*DELTA) return Q_EMPT_T; /* empty */
	if (n <= 2+4*DELTA) return Q_FULL_T; /* full  */
	if (n ==   5*DELTA) return GLOBAL;
	if (n ==   6*DELTA) return TIMEOUT_F;
	if (n ==   7*DELTA) return ALPHA_F;
	Uerror("cannot happen srinc_class");
	return BAD;
}
int
srunc(int n, int m)
{	switch(m) {
	case Q_FULL_F: return n-2;
	case Q_EMPT_F: return n-2-DELTA;
	case Q_EMPT_T: return n-2-2*DELTA;
	case Q_FULL_T: return n-2-3*DELTA;
	case ALPHA_F:
	case TIMEOUT_F: return 257; /* non-zero, and > MAXQ */
	}
	Uerror("cannot happen srunc");
	return 0;
}
#endif
int cnt;
#ifdef HAS_UNLESS
int
isthere(Trans *a, int b)
{	Trans *t;
	for (t = a; t; t = t->nxt)
		if (t->t_id == b)
			return 1;
	return 0;
}
#endif
#ifndef NOREDUCE
int
mark_safety(Trans *t) /* for conditional safety */
{	int g = 0, i, j, k;

	if (!t) return 0;
	if (t->qu[0])
		return (t->qu[1])?2:1;	/* marked */

	for (i = 0; i < 2; i++)
	{	j = srinc_set(t->tpe[i]);
		if (j >= GLOBAL && j != ALPHA_F)
			return -1;
		if (j != LOCAL)
		{	k = srunc(t->tpe[i], j);
			if (g == 0
			||  t->qu[0] != k
			||  t->ty[0] != j)
			{	t->qu[g] = k;
				t->ty[g] = j;
				g++;
	}	}	}
	return g;
}
#endif
void
retrans(int n, int m, int is, short srcln[], uchar reach[], uchar lpstate[])
	/* process n, with m states, is=initial state */
{	Trans *T0, *T1, *T2, *T3;
	Trans *T4, *T5; /* t_reverse or has_unless */
	int i;
#if defined(HAS_UNLESS) || !defined(NOREDUCE)
	int k;
#endif
#ifndef NOREDUCE
	int g, h, j, aa;
#endif
#ifdef HAS_UNLESS
	int p;
#endif
	if (state_tables >= 4)
	{	printf("STEP 1 %s\n", 
			procname[n]);
		for (i = 1; i < m; i++)
		for (T0 = trans[n][i]; T0; T0 = T0->nxt)
			crack(n, i, T0, srcln);
		return;
	}
	do {
		for (i = 1, cnt = 0; i < m; i++)
		{	T2 = trans[n][i];
			T1 = T2?T2->nxt:(Trans *)0;
/* prescan: */		for (T0 = T1; T0; T0 = T0->nxt)
/* choice in choice */	{	if (T0->st && trans[n][T0->st]
				&&  trans[n][T0->st]->nxt)
					break;
			}
#if 0
		if (T0)
		printf("\tstate %d / %d: choice in choice\n",
		i, T0->st);
#endif
			if (T0)
			for (T0 = T1; T0; T0 = T0->nxt)
			{	T3 = trans[n][T0->st];
				if (!T3->nxt)
				{	T2->nxt = cpytr(T0);
					T2 = T2->nxt;
					imed(T2, T0->st, n, i);
					continue;
				}
				do {	T3 = T3->nxt;
					T2->nxt = cpytr(T3);
					T2 = T2->nxt;
					imed(T2, T0->st, n, i);
				} while (T3->nxt);
				cnt++;
			}
		}
	} while (cnt);
	if (state_tables >= 3)
	{	printf("STEP 2 %s\n", 
			procname[n]);
		for (i = 1; i < m; i++)
		for (T0 = trans[n][i]; T0; T0 = T0->nxt)
			crack(n, i, T0, srcln);
		return;
	}
	for (i = 1; i < m; i++)
	{	if (trans[n][i] && trans[n][i]->nxt) /* optimize */
		{	T1 = trans[n][i]->nxt;
#if 0
			printf("\t\tpull %d (%d) to %d\n",
			T1->st, T1->forw, i);
#endif
			srcln[i] = srcln[T1->st];	/* Oyvind Teig, 5.2.0 */

			if (!trans[n][T1->st]) continue;
			T0 = cpytr(trans[n][T1->st]);
			trans[n][i] = T0;
			reach[T1->st] = 1;
			imed(T0, T1->st, n, i);
			for (T1 = T1->nxt; T1; T1 = T1->nxt)
			{
#if 0
			printf("\t\tpull %d (%d) to %d\n",
				T1->st, T1->forw, i);
#endif
		/*		srcln[i] = srcln[T1->st];  gh: not useful */
				if (!trans[n][T1->st]) continue;
				T0->nxt = cpytr(trans[n][T1->st]);
				T0 = T0->nxt;
				reach[T1->st] = 1;
				imed(T0, T1->st, n, i);
	}	}	}
	if (state_tables >= 2)
	{	printf("STEP 3 %s\n", 
			procname[n]);
		for (i = 1; i < m; i++)
		for (T0 = trans[n][i]; T0; T0 = T0->nxt)
			crack(n, i, T0, srcln);
		return;
	}
#ifdef HAS_UNLESS
	for (i = 1; i < m; i++)
	{	if (!trans[n][i]) continue;
		/* check for each state i if an
		 * escape to some state p is defined
		 * if so, copy and mark p's transitions
		 * and prepend them to the transition-
		 * list of state i
		 */
	 if (!like_java) /* the default */
	 {	for (T0 = trans[n][i]; T0; T0 = T0->nxt)
		for (k = HAS_UNLESS-1; k >= 0; k--)
		{	if (p = T0->escp[k])
			for (T1 = trans[n][p]; T1; T1 = T1->nxt)
			{	if (isthere(trans[n][i], T1->t_id))
					continue;
				T2 = cpytr(T1);
				T2->e_trans = p;
				T2->nxt = trans[n][i];
				trans[n][i] = T2;
		}	}
	 } else /* outermost unless checked first */
	 {	T4 = T3 = (Trans *) 0;
		for (T0 = trans[n][i]; T0; T0 = T0->nxt)
		for (k = HAS_UNLESS-1; k >= 0; k--)
		{	if (p = T0->escp[k])
			for (T1 = trans[n][p]; T1; T1 = T1->nxt)
			{	if (isthere(trans[n][i], T1->t_id))
					continue;
				T2 = cpytr(T1);
				T2->nxt = (Trans *) 0;
				T2->e_trans = p;
				if (T3)	T3->nxt = T2;
				else	T4 = T2;
				T3 = T2;
		}	}
		if (T4)
		{	T3->nxt = trans[n][i];
			trans[n][i] = T4;
		}
	 }
	}
#endif
#ifndef NOREDUCE
	for (i = 1; i < m; i++)
	{	if (a_cycles)
		{ /* moves through these states are visible */
	#if PROG_LAB>0 && defined(HAS_NP)
			if (progstate[n][i])
				goto degrade;
			for (T1 = trans[n][i]; T1; T1 = T1->nxt)
				if (progstate[n][T1->st])
					goto degrade;
	#endif
			if (accpstate[n][i] || visstate[n][i])
				goto degrade;
			for (T1 = trans[n][i]; T1; T1 = T1->nxt)
				if (accpstate[n][T1->st])
					goto degrade;
		}
		T1 = trans[n][i];
		if (!T1) continue;
		g = mark_safety(T1);	/* V3.3.1 */
		if (g < 0) goto degrade; /* global */
		/* check if mixing of guards preserves reduction */
		if (T1->nxt)
		{	k = 0;
			for (T0 = T1; T0; T0 = T0->nxt)
			{	if (!(T0->atom&8))
					goto degrade;
				for (aa = 0; aa < 2; aa++)
				{	j = srinc_set(T0->tpe[aa]);
					if (j >= GLOBAL && j != ALPHA_F)
						goto degrade;
					if (T0->tpe[aa]
					&&  T0->tpe[aa]
					!=  T1->tpe[0])
						k = 1;
			}	}
			/* g = 0;	V3.3.1 */
			if (k)	/* non-uniform selection */
			for (T0 = T1; T0; T0 = T0->nxt)
			for (aa = 0; aa < 2; aa++)
			{	j = srinc_set(T0->tpe[aa]);
				if (j != LOCAL)
				{	k = srunc(T0->tpe[aa], j);
					for (h = 0; h < 6; h++)
						if (T1->qu[h] == k
						&&  T1->ty[h] == j)
							break;
					if (h >= 6)
					{	T1->qu[g%6] = k;
						T1->ty[g%6] = j;
						g++;
			}	}	}
			if (g > 6)
			{	T1->qu[0] = 0;	/* turn it off */
				printf("pan: warning, line %d, ",
					srcln[i]);
			 	printf("too many stmnt types (%d)",
					g);
			  	printf(" in selection\n");
			  goto degrade;
			}
		}
		/* mark all options global if >=1 is global */
		for (T1 = trans[n][i]; T1; T1 = T1->nxt)
			if (!(T1->atom&8)) break;
		if (T1)
degrade:	for (T1 = trans[n][i]; T1; T1 = T1->nxt)
			T1->atom &= ~8;	/* mark as unsafe */
		/* can only mix 'r's or 's's if on same chan */
		/* and not mixed with other local operations */
		T1 = trans[n][i];
		if (!T1 || T1->qu[0]) continue;
		j = T1->tpe[0];
		if (T1->nxt && T1->atom&8)
		{ if (j == 5*DELTA)
		  {	printf("warning: line %d ", srcln[i]);
			printf("mixed condition ");
			printf("(defeats reduction)\n");
			goto degrade;
		  }
		  for (T0 = T1; T0; T0 = T0->nxt)
		  for (aa = 0; aa < 2; aa++)
		  if  (T0->tpe[aa] && T0->tpe[aa] != j)
		  {	printf("warning: line %d ", srcln[i]);
			printf("[%d-%d] mixed %stion ",
				T0->tpe[aa], j, 
				(j==5*DELTA)?"condi":"selec");
			printf("(defeats reduction)\n");
			printf("	'%s' <-> '%s'\n",
				T1->tp, T0->tp);
			goto degrade;
		} }
	}
#endif
	for (i = 1; i < m; i++)
	{	T2 = trans[n][i];
		if (!T2
		||  T2->nxt
		||  strncmp(T2->tp, ".(goto)", 7)
		||  !stopstate[n][i])
			continue;
		stopstate[n][T2->st] = 1;
	}
	if (state_tables && !verbose)
	{	if (dodot)
		{	char buf[256], *q = buf, *p = procname[n];
			while (*p != '\0')
			{	if (*p != ':')
				{	*q++ = *p;
				}
				p++;
			}
			*q = '\0';
			printf("digraph ");
			switch (Btypes[n]) {
			case I_PROC:  printf("init {\n"); break;
			case N_CLAIM: printf("claim_%s {\n", buf); break;
			case E_TRACE: printf("notrace {\n"); break;
			case N_TRACE: printf("trace {\n"); break;
			default:      printf("p_%s {\n", buf); break;
			}
			printf("size=\"8,10\";\n");
			printf("  GT [shape=box,style=dotted,label=\"%s\"];\n", buf);
			printf("  GT -> S%d;\n", is);
		} else
		{	switch (Btypes[n]) {
			case I_PROC:  printf("init\n"); break;
			case N_CLAIM: printf("claim %s\n", procname[n]); break;
			case E_TRACE: printf("notrace assertion\n"); break;
			case N_TRACE: printf("trace assertion\n"); break;
			default:      printf("proctype %s\n", procname[n]); break;
		}	}
		for (i = 1; i < m; i++)
		{	reach[i] = 1;
		}
		tagtable(n, m, is, srcln, reach);
		if (dodot) printf("}\n");
	} else
	for (i = 1; i < m; i++)
	{	int nrelse;
		if (Btypes[n] != N_CLAIM)
		{	for (T0 = trans[n][i]; T0; T0 = T0->nxt)
			{	if (T0->st == i
				&& strcmp(T0->tp, "(1)") == 0)
				{	printf("error: proctype '%s' ",
						procname[n]);
		  			printf("line %d, state %d: has un",
						srcln[i], i);
					printf("conditional self-loop\n");
					pan_exit(1);
		}	}	}
		nrelse = 0;
		for (T0 = trans[n][i]; T0; T0 = T0->nxt)
		{	if (strcmp(T0->tp, "else") == 0)
				nrelse++;
		}
		if (nrelse > 1)
		{	printf("error: proctype '%s' state",
				procname[n]);
		  	printf(" %d, inherits %d", i, nrelse);
		  	printf(" 'else' stmnts\n");
			pan_exit(1);
	}	}
#if !defined(LOOPSTATE) && !defined(BFS_PAR)
	if (state_tables)
#endif
	do_dfs(n, m, is, srcln, reach, lpstate);

	if (!t_reverse)
	{	return;
	}
	/* process n, with m states, is=initial state -- reverse list */
	if (!state_tables && Btypes[n] != N_CLAIM)
	{	for (i = 1; i < m; i++)
		{	Trans *Tx = (Trans *) 0; /* list of escapes */
			Trans *Ty = (Trans *) 0; /* its tail element */
			T1 = (Trans *) 0; /* reversed list */
			T2 = (Trans *) 0; /* its tail */
			T3 = (Trans *) 0; /* remembers possible 'else' */

			/* find unless-escapes, they should go first */
			T4 = T5 = T0 = trans[n][i];
	#ifdef HAS_UNLESS
			while (T4 && T4->e_trans) /* escapes are first in orig list */
			{	T5 = T4;	  /* remember predecessor */
				T4 = T4->nxt;
			}
	#endif
			/* T4 points to first non-escape, T5 to its parent, T0 to original list */
			if (T4 != T0)		 /* there was at least one escape */
			{	T3 = T5->nxt;		 /* start of non-escapes */
				T5->nxt = (Trans *) 0;	 /* separate */
				Tx = T0;		 /* start of the escapes */
				Ty = T5;		 /* its tail */
				T0 = T3;		 /* the rest, to be reversed */
			}
			/* T0 points to first non-escape, Tx to the list of escapes, Ty to its tail */

			/* first tail-add non-escape transitions, reversed */
			T3 = (Trans *) 0;
			for (T5 = T0; T5; T5 = T4)
			{	T4 = T5->nxt;
	#ifdef HAS_UNLESS
				if (T5->e_trans)
				{	printf("error: cannot happen!\n");
					continue;
				}
	#endif
				if (strcmp(T5->tp, "else") == 0)
				{	T3 = T5;
					T5->nxt = (Trans *) 0;
				} else
				{	T5->nxt = T1;
					if (!T1) { T2 = T5; }
					T1 = T5;
			}	}
			/* T3 points to a possible else, which is removed from the list */
			/* T1 points to the reversed list so far (without escapes) */
			/* T2 points to the tail element -- where the else should go */
			if (T2 && T3)
			{	T2->nxt = T3;	/* add else */
			} else
			{	if (T3) /* there was an else, but there's no tail */
				{	if (!T1)	/* and no reversed list */
					{	T1 = T3; /* odd, but possible */
					} else		/* even stranger */
					{	T1->nxt = T3;
			}	}	}

			/* add in the escapes, to that they appear at the front */
			if (Tx && Ty) { Ty->nxt = T1; T1 = Tx; }

			trans[n][i] = T1;
			/* reversed, with escapes first and else last */
	}	}
	if (state_tables && verbose)
	{	printf("FINAL proctype %s\n", 
			procname[n]);
		for (i = 1; i < m; i++)
		for (T0 = trans[n][i]; T0; T0 = T0->nxt)
			crack(n, i, T0, srcln);
	}
}
void
imed(Trans *T, int v, int n, int j)	/* set intermediate state */
{	progstate[n][T->st] |= progstate[n][v];
	accpstate[n][T->st] |= accpstate[n][v];
	stopstate[n][T->st] |= stopstate[n][v];
	mapstate[n][j] = T->st;
}
void
tagtable(int n, int m, int is, short srcln[], uchar reach[])
{	Trans *z;

	if (is >= m || !trans[n][is]
	||  is <= 0 || reach[is] == 0)
		return;
	reach[is] = 0;
	if (state_tables)
	for (z = trans[n][is]; z; z = z->nxt)
	{	if (dodot)
			dot_crack(n, is, z);
		else
			crack(n, is, z, srcln);
	}

	for (z = trans[n][is]; z; z = z->nxt)
	{
#ifdef HAS_UNLESS
		int i, j;
#endif
		tagtable(n, m, z->st, srcln, reach);
#ifdef HAS_UNLESS
		for (i = 0; i < HAS_UNLESS; i++)
		{	j = trans[n][is]->escp[i];
			if (!j) break;
			tagtable(n, m, j, srcln, reach);
		}
#endif
	}
}

extern Trans *t_id_lkup[];

void
dfs_table(int n, int m, int is, short srcln[], uchar reach[], uchar lpstate[])
{	Trans *z;

	if (is >= m || is <= 0 || !trans[n][is])
		return;
	if ((reach[is] & (4|8|16)) != 0)
	{	if ((reach[is] & (8|16)) == 16)	/* on stack, not yet recorded */
		{	lpstate[is] = 1;
			reach[is] |= 8; /* recorded */
			if (state_tables && verbose)
			{	printf("state %d line %d is a loopstate\n", is, srcln[is]);
		}	}
		return;
	}
	reach[is] |= (4|16);	/* visited | onstack */
	for (z = trans[n][is]; z; z = z->nxt)
	{	t_id_lkup[z->t_id] = z;
#ifdef HAS_UNLESS
		int i, j;
#endif
		dfs_table(n, m, z->st, srcln, reach, lpstate);
#ifdef HAS_UNLESS
		for (i = 0; i < HAS_UNLESS; i++)
		{	j = trans[n][is]->escp[i];
			if (!j) break;
			dfs_table(n, m, j, srcln, reach, lpstate);
		}
#endif
	}
	reach[is] &= ~16; /* no longer on stack */
}
void
do_dfs(int n, int m, int is, short srcln[], uchar reach[], uchar lpstate[])
{	int i;
	dfs_table(n, m, is, srcln, reach, lpstate);
	for (i = 0; i < m; i++)
		reach[i] &= ~(4|8|16);
}
void
crack(int n, int j, Trans *z, short srcln[])
{	int i;

	if (!z) return;
	printf("	state %3d -(tr %3d)-> state %3d  ",
		j, z->forw, z->st);
	printf("[id %3d tp %3d", z->t_id, z->tpe[0]);
	if (z->tpe[1]) printf(",%d", z->tpe[1]);
#ifdef HAS_UNLESS
	if (z->e_trans)
		printf(" org %3d", z->e_trans);
	else if (state_tables >= 2)
	for (i = 0; i < HAS_UNLESS; i++)
	{	if (!z->escp[i]) break;
		printf(" esc %d", z->escp[i]);
	}
#endif
	printf("]");
	printf(" [%s%s%s%s%s] %s:%d => ",
		z->atom&6?"A":z->atom&32?"D":"-",
		accpstate[n][j]?"a" :"-",
		stopstate[n][j]?"e" : "-",
		progstate[n][j]?"p" : "-",
		z->atom & 8 ?"L":"G",
		PanSource, srcln[j]);
	for (i = 0; z->tp[i]; i++)
		if (z->tp[i] == '\n')
			printf("\\n");
		else
			putchar(z->tp[i]);
	if (verbose && z->qu[0])
	{	printf("\t[");
		for (i = 0; i < 6; i++)
			if (z->qu[i])
				printf("(%d,%d)",
				z->qu[i], z->ty[i]);
		printf("]");
	}
	printf("\n");
	fflush(stdout);
}
/* spin -a m.pml; cc -o pan pan.c; ./pan -D | dot -Tps > foo.ps; ps2pdf foo.ps */
void
dot_crack(int n, int j, Trans *z)
{	int i;

	if (!z) return;
	printf("	S%d -> S%d  [color=black", j, z->st);

	if (z->atom&6) printf(",style=dashed");
	else if (z->atom&32) printf(",style=dotted");
	else if (z->atom&8) printf(",style=solid");
	else printf(",style=bold");

	printf(",label=\"");
	for (i = 0; z->tp[i]; i++)
	{	if (z->tp[i] == '\\'
		&&  z->tp[i+1] == 'n')
		{	i++; printf(" ");
		} else
		{	putchar(z->tp[i]);
	}	}
	printf("\"];\n");
	if (accpstate[n][j]) printf("  S%d [color=red,style=bold];\n", j);
	else if (progstate[n][j]) printf("  S%d [color=green,style=bold];\n", j);
	if (stopstate[n][j]) printf("  S%d [color=blue,style=bold,shape=box];\n", j);
}

#ifdef VAR_RANGES
#define BYTESIZE	32	/* 2^8 : 2^3 = 256:8 = 32 */

typedef struct Vr_Ptr {
	char	*nm;
	uchar	vals[BYTESIZE];
	struct Vr_Ptr *nxt;
} Vr_Ptr;
Vr_Ptr *ranges = (Vr_Ptr *) 0;

void
logval(char *s, int v)
{	Vr_Ptr *tmp;

	if (v<0 || v > 255) return;
	for (tmp = ranges; tmp; tmp = tmp->nxt)
		if (!strcmp(tmp->nm, s))
			goto found;
	tmp = (Vr_Ptr *) emalloc(sizeof(Vr_Ptr));
	tmp->nxt = ranges;
	ranges = tmp;
	tmp->nm = s;
found:
	tmp->vals[(v)/8] |= 1<<((v)%8);
}

void
dumpval(uchar X[], int range)
{	int w, x, i, j = -1;

	for (w = i = 0; w < range; w++)
	for (x = 0; x < 8; x++, i++)
	{
from:		if ((X[w] & (1<<x)))
		{	printf("%d", i);
			j = i;
			goto upto;
	}	}
	return;
	for (w = 0; w < range; w++)
	for (x = 0; x < 8; x++, i++)
	{
upto:		if (!(X[w] & (1<<x)))
		{	if (i-1 == j)
				printf(", ");
			else
				printf("-%d, ", i-1);
			goto from;
	}	}
	if (j >= 0 && j != 255)
		printf("-255");
}

void
dumpranges(void)
{	Vr_Ptr *tmp;
	printf("\nValues assigned within ");
	printf("interval [0..255]:\n");
	for (tmp = ranges; tmp; tmp = tmp->nxt)
	{	printf("\t%s\t: ", tmp->nm);
		dumpval(tmp->vals, BYTESIZE);
		printf("\n");
	}
}
#endif
